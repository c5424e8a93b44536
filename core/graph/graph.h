// The compute graph: graph inputs (activations, weights, constants), nodes that each produce one tensor
// named after the node, and graph outputs. Built and validated by build_graph(); immutable afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/graph/attrs.h"
#include "core/graph/diagnostic.h"
#include "core/graph/op_registry.h"
#include "core/graph/shape.h"

namespace fx {

// Values are the graph's tensors: graph inputs first (ids 0..I-1), then one per node (I + node id).
using ValueId = std::int32_t;
using NodeId = std::int32_t;

enum class Role : std::uint8_t { activation, weight, constant };
std::string_view role_name(Role r);

struct GraphInput {
  std::string name;
  TensorType type;
  Role role = Role::activation;
  bool operator==(const GraphInput&) const = default;
};

struct Operand {
  ValueId value = -1;   // -1 for a scalar literal
  double scalar = 0.0;
  bool is_scalar() const { return value < 0; }
  bool operator==(const Operand&) const = default;
};

struct Node {
  std::string name;
  std::string op;               // the name in the file; decide by op_id(), never by comparing it
  const OpDef* def = nullptr;  // set by build_graph
  std::vector<Operand> inputs;
  Attrs attrs;  // defaults filled in
  TensorType type;
  std::string label;  // custom op's label, "" otherwise
  // Where the node came from, kept for people, not for identity: e.g. the ONNX node it was imported from,
  // `onnx node "/layer1/0/conv1/Conv" (Conv)`. "" when the file does not say.
  std::string source;
  bool operator==(const Node& o) const {
    return name == o.name && op == o.op && inputs == o.inputs && attrs == o.attrs && type == o.type;
  }
  OpId op_id() const { return def->id; }
  OpClass op_class() const { return def->op_class; }
};

// What a file or a program describes before validation: inputs name things by string.
struct NodeSpec {
  std::string name;
  std::string op;
  std::vector<std::variant<std::string, double>> inputs;
  Attrs attrs;
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  std::string source;  // Node::source
};

struct GraphSpec {
  std::string name;
  std::string description;
  std::vector<GraphInput> inputs;
  std::vector<NodeSpec> nodes;
  std::vector<std::string> outputs;
};

namespace detail {
struct GraphBuilder;
}

class Graph {
 public:
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[static_cast<std::size_t>(id)]; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_values() const { return static_cast<int>(inputs_.size() + nodes_.size()); }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  bool is_input(ValueId v) const { return v < static_cast<ValueId>(inputs_.size()); }
  ValueId value_of(NodeId n) const { return static_cast<ValueId>(inputs_.size()) + n; }
  // The node producing v, or nullopt for a graph input.
  std::optional<NodeId> producer(ValueId v) const;
  const std::string& value_name(ValueId v) const;
  const TensorType& value_type(ValueId v) const;
  std::optional<ValueId> find_value(const std::string& name) const;
  std::optional<NodeId> find_node(const std::string& name) const;
  bool is_output(ValueId v) const { return is_output_[static_cast<std::size_t>(v)]; }

  // Nodes reading v, each once, in node order.
  const std::vector<NodeId>& consumers(ValueId v) const { return consumers_[static_cast<std::size_t>(v)]; }
  // Nodes producing n's inputs, each once, in node order.
  const std::vector<NodeId>& producers(NodeId n) const { return producers_[static_cast<std::size_t>(n)]; }
  // Distinct tensor inputs of n (scalars skipped), in operand order.
  std::vector<ValueId> tensor_inputs(NodeId n) const;
  // Topological order of the nodes; ties by file order.
  const std::vector<NodeId>& topo_order() const { return topo_; }
  // Where n stands in topo_order(): sorting a node set by it costs its own size, not the graph's.
  int topo_position(NodeId n) const { return topo_pos_[static_cast<std::size_t>(n)]; }
  double flops(NodeId n) const { return flops_[static_cast<std::size_t>(n)]; }

  bool operator==(const Graph& o) const {
    return name_ == o.name_ && description_ == o.description_ && inputs_ == o.inputs_ && nodes_ == o.nodes_ &&
           outputs_ == o.outputs_;
  }

 private:
  friend Expected<Graph> build_graph(const GraphSpec& spec);
  friend struct detail::GraphBuilder;
  std::string name_, description_;
  std::vector<GraphInput> inputs_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
  std::vector<bool> is_output_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<std::vector<NodeId>> producers_;
  std::vector<NodeId> topo_;
  std::vector<int> topo_pos_;
  std::vector<double> flops_;
  std::unordered_map<std::string, ValueId> by_name_;
};

// A node as messages name it: "q_h (transpose)", or "max_pool2d" where the name is the op's.
std::string node_label(const Graph& g, NodeId n);

// The first difference between two graphs for a message ("node 3 'y': op relu vs gelu"), empty when equal.
std::string first_difference(const Graph& a, const Graph& b);

// The largest rank of any tensor, stated or inferred (the format's limit; LoadLimits may be tighter).
inline constexpr std::size_t kMaxRank = 16;

// Validates a spec and builds the graph, or lists every problem with its JSON pointer.
Expected<Graph> build_graph(const GraphSpec& spec);

}  // namespace fx
