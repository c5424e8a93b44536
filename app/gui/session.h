// The open document: a graph, the fusion engine holding its plan, and the undo stack whose commands drive
// the engine. The model side of the app: it never points at view objects.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QUndoStack>
#include <memory>
#include <optional>

#include "app/gui/graph_drawing.h"
#include "core/fusion/engine.h"

namespace fx::app {

// What a failed open reports: the file and the loader's located messages.
struct LoadFailure {
  QString path;
  Diagnostics errors;
  QString text() const;  // "file: /nodes/3/inputs/1: unknown input 'q'" one per line
};

// A loaded document, built off the GUI thread if need be: immutable until handed to a Session.
struct LoadedDocument {
  QString path;
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<FusionEngine> engine;
  QStringList warnings;  // what an import noticed (ops kept opaque, assumed dimensions), one line each
};

// Reads a graph file, a fused graph file (a graph with a "fusion" section, which restores its plan), or an
// ONNX model (*.onnx) through the importer, as `fusion-cli import` does.
std::variant<LoadedDocument, LoadFailure> load_document(const QString& path, const DeviceDescription& device);
std::variant<LoadedDocument, LoadFailure> document_from_graph(const QString& name, Graph graph,
                                                              const DeviceDescription& device);

class Session : public QObject {
  Q_OBJECT
 public:
  explicit Session(QObject* parent = nullptr);

  bool has_document() const { return engine_ != nullptr; }
  void set_document(LoadedDocument doc);
  void close_document();

  const QString& path() const { return path_; }
  void set_path(const QString& path) { path_ = path; }
  const Graph& graph() const { return *graph_; }
  std::shared_ptr<const Graph> graph_ptr() const { return graph_; }
  FusionEngine& engine() { return *engine_; }
  const FusionEngine& engine() const { return *engine_; }
  QUndoStack* undo_stack() { return &undo_; }
  bool modified() const { return !undo_.isClean(); }
  void mark_saved() { undo_.setClean(); }

  // The plan's groups in the form the view draws.
  std::vector<GroupInfo> group_infos() const;

  // User actions; each successful one becomes one undo command. Return the engine's decision.
  FusionDecision accept(const QString& candidate_id);
  FusionDecision reject(const QString& candidate_id, const QString& why = {});
  int auto_fuse();
  // What-if: new limits or device; rebuilds the engine on the same plan (not an undo step: it changes
  // the question, not the answer the user gave).
  void set_what_if(const EngineOptions& options, const DeviceDescription& device);
  const DeviceDescription& device() const { return engine_->cost_model().device(); }

  // Saves the graph with its fusion section, atomically. Returns "" or an error message.
  QString save(const QString& path);

  // Called by the undo commands after they moved the engine.
  void notify_plan_changed() { emit plan_changed(); }

  // Crash protection: once enabled, every change of a modified document writes the session (graph, plan and
  // decisions, atomically) to `path`; saving, closing or returning to the saved state removes it. A file left
  // behind at start means the program did not close normally (the program offers to restore it).
  void enable_autosave(const QString& path);
  const QString& autosave_path() const { return autosave_path_; }
  void discard_autosave() { remove_autosave(); }  // a normal exit: nothing to restore next time

 signals:
  void document_changed();  // a new graph (or none)
  void plan_changed();      // accept/reject/undo/redo/what-if

 private:
  QString path_;
  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<FusionEngine> engine_;
  QUndoStack undo_;
  QString autosave_path_;  // empty: autosave off (tests, screenshots)
  void autosave();
  void remove_autosave();
};

}  // namespace fx::app
