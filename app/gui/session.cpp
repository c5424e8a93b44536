#include "app/gui/session.h"

#include <QFile>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "app/gui/fusion_commands.h"
#include "app/import/onnx_import.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool heavy(const Graph& graph, NodeId n) {
  const OpClass c = graph.node(n).op_class();
  return c == OpClass::reduction || c == OpClass::contraction;
}

// The engine's "epilogue" kind covers any internal edge touching a reduction or contraction. For people, work
// merged in after it is an epilogue and a producer merged in before it is a prologue (res1 into ln2).
QString kinds_text(const Graph& graph, const Group& g) {
  QStringList kinds;
  for (FusionKind k : g.kinds) {
    if (k != FusionKind::epilogue) {
      kinds << qs(std::string(to_string(k)));
      continue;
    }
    bool prologue = false, epilogue = false;
    for (NodeId c : g.nodes) {
      for (NodeId p : graph.producers(c)) {
        if (std::find(g.nodes.begin(), g.nodes.end(), p) == g.nodes.end()) continue;
        epilogue = epilogue || heavy(graph, p);
        prologue = prologue || (heavy(graph, c) && !heavy(graph, p));
      }
    }
    if (prologue) kinds << QStringLiteral("prologue");
    if (epilogue || !prologue) kinds << QStringLiteral("epilogue");
  }
  return kinds.isEmpty() ? QStringLiteral("single") : kinds.join('+');
}

bool has_fusion_section(const std::string& text) {
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.contains("fusion");
}

std::variant<LoadedDocument, LoadFailure> import_onnx_document(const QString& path, const DeviceDescription& device) {
  std::vector<std::string> warnings;
  auto spec = import_onnx_file(path.toStdString(), OnnxImportOptions{}, warnings);
  if (!spec) return LoadFailure{path, spec.errors()};
  auto graph = build_graph(*spec);
  if (!graph) return LoadFailure{path, graph.errors()};
  auto shared = std::make_shared<const Graph>(std::move(*graph));
  LoadedDocument doc{path, shared, std::make_shared<FusionEngine>(shared, device), {}};
  for (const std::string& w : warnings) doc.warnings << qs(w);
  return doc;
}

}  // namespace

QString LoadFailure::text() const {
  return QString::fromStdString(format_diagnostics(errors, path.toStdString()));
}

std::variant<LoadedDocument, LoadFailure> load_document(const QString& path, const DeviceDescription& device) {
  if (path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive)) return import_onnx_document(path, device);
  const LoadLimits limits;
  auto text = read_text_file(path.toStdString(), limits.max_file_bytes);
  if (!text) return LoadFailure{path, text.errors()};
  if (has_fusion_section(*text)) {
    auto engine = FusionEngine::load_fused_graph(*text, device);
    if (!engine) return LoadFailure{path, engine.errors()};
    auto shared = std::make_shared<FusionEngine>(std::move(*engine));
    auto graph = std::make_shared<const Graph>(shared->graph());
    return LoadedDocument{path, graph, shared, {}};
  }
  auto graph = load_graph(*text, limits);
  if (!graph) return LoadFailure{path, graph.errors()};
  auto shared = std::make_shared<const Graph>(std::move(*graph));
  return LoadedDocument{path, shared, std::make_shared<FusionEngine>(shared, device), {}};
}

std::variant<LoadedDocument, LoadFailure> document_from_graph(const QString& name, Graph graph,
                                                              const DeviceDescription& device) {
  auto shared = std::make_shared<const Graph>(std::move(graph));
  return LoadedDocument{name, shared, std::make_shared<FusionEngine>(shared, device), {}};
}

Session::Session(QObject* parent) : QObject(parent) {
  connect(&undo_, &QUndoStack::indexChanged, this, [this] { autosave(); });
}

void Session::enable_autosave(const QString& path) { autosave_path_ = path; }

void Session::autosave() {
  if (autosave_path_.isEmpty()) return;
  if (!engine_ || !modified()) {
    remove_autosave();
    return;
  }
  // Best effort: a failed autosave must not disturb the user's work; the next change tries again.
  (void)write_text_file_atomic(autosave_path_.toStdString(), engine_->save_fused_graph());
}

void Session::remove_autosave() {
  if (!autosave_path_.isEmpty()) QFile::remove(autosave_path_);
}

void Session::set_document(LoadedDocument doc) {
  undo_.clear();
  path_ = doc.path;
  graph_ = std::move(doc.graph);
  engine_ = std::move(doc.engine);
  undo_.setClean();
  emit document_changed();
}

void Session::close_document() {
  remove_autosave();
  undo_.clear();
  engine_.reset();
  graph_.reset();
  path_.clear();
  emit document_changed();
}

std::vector<GroupInfo> Session::group_infos(bool unfused) const {
  std::vector<GroupInfo> out;
  if (!engine_) return out;
  const Plan before = unfused ? Plan::unfused(*graph_, engine_->cost_model()) : Plan();
  const Plan& plan = unfused ? before : engine_->plan();
  for (std::size_t i = 0; i < plan.groups().size(); ++i) {
    const Group& g = plan.groups()[i];
    GroupInfo info;
    info.id = qs(g.id);
    info.kernel = qs(group_kernel_name(*graph_, plan, static_cast<int>(i)));
    info.kind = kinds_text(*graph_, g);
    info.nodes = g.nodes;
    info.view = g.is_view();
    info.summary = info.view ? tr("view of %1: no kernel, 0 B").arg(qs(graph_->value_name(g.view_of)))
                             : QStringLiteral("%1, %2 µs")
                                   .arg(qs(format_bytes(static_cast<double>(g.cost.bytes_moved()))))
                                   .arg(g.cost.time_s * 1e6, 0, 'f', 1);
    out.push_back(std::move(info));
  }
  return out;
}

FusionDecision Session::accept(const QString& candidate_id) {
  FusionEngine::State before = engine_->state();
  FusionDecision d = engine_->accept(candidate_id.toStdString());
  if (d.fuse) undo_.push(new AcceptCandidateCommand(*this, candidate_id, std::move(before)));
  return d;
}

FusionDecision Session::reject(const QString& candidate_id, const QString& why) {
  FusionEngine::State before = engine_->state();
  FusionDecision d = engine_->reject(candidate_id.toStdString(), why.toStdString());
  // A reject the engine recorded changed its state; one it refused (no such candidate) did not.
  if (!(engine_->state() == before)) undo_.push(new RejectCandidateCommand(*this, candidate_id, std::move(before)));
  return d;
}

int Session::auto_fuse() {
  FusionEngine::State before = engine_->state();
  const int merges = engine_->auto_fuse();
  if (merges > 0) undo_.push(new AutoFuseCommand(*this, merges, std::move(before)));
  return merges;
}

void Session::set_what_if(const EngineOptions& options, const DeviceDescription& device) {
  if (device == engine_->cost_model().device()) {
    engine_->set_options(options);
  } else {
    // The engine's device is fixed at construction: carry the plan over through the fused-graph format.
    // The plan-level history does not survive that, so the undo stack is cleared with it.
    auto reloaded = FusionEngine::load_fused_graph(engine_->save_fused_graph(), device, options);
    if (!reloaded) return;
    undo_.clear();
    engine_ = std::make_shared<FusionEngine>(std::move(*reloaded));
  }
  emit plan_changed();
}

QString Session::save(const QString& path) {
  auto written = write_text_file_atomic(path.toStdString(), engine_->save_fused_graph());
  if (!written) return QString::fromStdString(format_diagnostics(written.errors(), path.toStdString()));
  path_ = path;
  undo_.setClean();
  remove_autosave();
  return {};
}

}  // namespace fx::app
