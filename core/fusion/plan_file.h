// The "fusion" section of a fused-graph file read as data: which nodes each group holds, who made the plan
// ("source": our engine, a person, or a compiler such as Inductor whose decisions were recorded) and the
// reasons that plan's maker gave for not fusing pairs of nodes. No legality check here: a plan recorded from
// another compiler may hold groups our engine would not form, and comparing plans must still read it.
// FusionEngine::load_fused_graph keeps the plan's source and pair reasons through read_plan_annotations.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/diagnostic.h"
#include "core/graph/graph.h"

namespace fx {

inline constexpr const char* kOurPlanSource = "fusion-explorer";

// Why the plan's maker did not fuse the nodes in `a` with those in `b` (the two sides as it saw them).
struct PairReason {
  std::vector<NodeId> a, b;
  std::string source;   // who said it: "inductor", ...
  std::string code;     // its reason grouped into a code ("OPAQUE_OP", "INDUCTOR_OTHER", ...), for filtering
  std::string message;  // its own words
  bool involves(NodeId x, NodeId y) const;  // x on one side and y on the other
};

struct PlanFileGroup {
  std::string id;
  std::vector<NodeId> nodes;
  std::vector<NodeId> recomputed;
  std::string kernel;    // the maker's kernel name, "" when not given
  bool library = false;  // a library call (cuBLAS, cuDNN, an extern kernel)
  bool launched = true;  // false where the maker ran no kernel for these nodes (a view it reinterpreted)
};

struct PlanFile {
  std::string source = kOurPlanSource;
  std::string producer;                     // e.g. "torch 2.11.0, cuda, NVIDIA H100"; "" for our engine
  std::vector<PlanFileGroup> groups;        // nodes in no group in the file become groups of their own
  std::vector<PairReason> pair_reasons;
  std::optional<double> measured_time_us;   // what the maker measured for the whole plan, when recorded
  std::vector<std::string> notes;
  std::vector<NodeId> unassigned;           // nodes the file put in no group (each now a group of its own)
  bool is_ours() const { return source == kOurPlanSource || source == "user"; }
  // Each group's node sets; a partition of the graph (checked by the reader).
  std::vector<std::vector<NodeId>> node_sets() const;
};

// Reads a "fusion" section for graph `g`; errors carry JSON pointers under /fusion. Groups must not share a
// node; nodes the file leaves out become groups of their own.
// The node names listed at `pointer`; each entry that is not a name of g is an error there.
std::vector<NodeId> read_node_names(const Graph& g, const nlohmann::json& list, const std::string& pointer,
                                    Diagnostics& errors);

Expected<PlanFile> read_plan_section(const Graph& g, const nlohmann::json& fusion);

// Reads only "source" and "pair_reasons" (what FusionEngine keeps beside its own plan).
Expected<PlanFile> read_plan_annotations(const Graph& g, const nlohmann::json& fusion);

nlohmann::ordered_json pair_reasons_json(const Graph& g, const std::vector<PairReason>& reasons);

}  // namespace fx
