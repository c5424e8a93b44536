// The main window: the graph view in the middle, docks for candidates, explanation, what-if, history and
// measurements; menus, shortcuts, recent files, samples, status bar. Panels live in their own files.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointer>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"
#include "app/gui/session.h"

class QLabel;
class QLineEdit;
class QMenu;
class QActionGroup;
class QUndoView;

namespace fx::app {

class Breadcrumbs;
class CandidatesPanel;
class ComparePanel;
class ExplainPanel;
class Minimap;
class ScopeView;
class GraphScene;
class GraphView;
class LayoutRunner;
class RunPanel;
class WhatIfPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a file; on failure shows the error dialog (unless quiet) and keeps the current document.
  bool open_file(const QString& path, bool quiet = false);
  // File > Open's filter: graphs, sessions and ONNX models (imported as `fusion-cli import` does).
  static QString open_filter();
  void open_generated_transformer(int layers);
  Session& session() { return *session_; }
  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  RunPanel* run_panel() const { return run_; }
  ComparePanel* compare_panel() const { return compare_; }
  void set_view_mode(ViewMode mode);
  ViewMode view_mode() const { return mode_; }
  bool layout_busy() const;
  LayoutRunner* layout_runner() const { return layout_; }
  ScopeView* scopes() const { return scopes_; }
  Minimap* minimap() const { return minimap_; }
  Breadcrumbs* breadcrumbs() const { return breadcrumbs_; }
  // Finds the next node, group or scope matching `text`, expanding scopes to show it (as the Find box does).
  void find_next(const QString& text);
  // Fusion > Accept all profitable, as the menu and the candidates panel run it.
  void accept_all_profitable();
  QString last_error() const { return last_error_; }
  double last_first_picture_s() const { return first_picture_s_; }
  // Scripted runs (screenshots, timings) quit without asking to save.
  void set_confirm_close(bool on) { confirm_close_ = on; }

 signals:
  void picture_ready(double seconds);  // a layout was shown; seconds since the open (or relayout) began

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_docks();
  void build_menus();
  void build_file_menu();
  void build_view_menu();
  void build_fusion_menu();
  void build_status_bar();
  void build_navigation();
  void show_focus();
  void update_breadcrumbs();
  void note_changed_nodes();
  void fill_samples_menu(QMenu* menu);
  void update_recent_menu();
  void add_recent(const QString& path);
  void adopt(LoadedDocument doc);
  void show_import_warnings(const QString& path, const QStringList& warnings, bool quiet);
  void relayout();
  void on_layout_finished(std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& result);
  void on_plan_changed();
  void update_status();
  void update_title();
  void on_selection_changed();
  void search_next();
  void why_not_fused();
  bool maybe_save();
  void save_as();
  void save();
  void export_view(const QString& format);
  void export_dot();
  void export_timings(const QString& format);
  void apply_palette(bool dark);
  void refresh_rejected_marks();

  Session* session_;
  GraphScene* scene_;
  GraphView* view_;
  LayoutRunner* layout_;
  ScopeView* scopes_ = nullptr;
  Minimap* minimap_ = nullptr;
  Breadcrumbs* breadcrumbs_ = nullptr;
  std::vector<NodeId> changed_nodes_;  // nodes whose group an accept/reject changed: marked on the next picture
  CandidatesPanel* candidates_ = nullptr;
  ExplainPanel* explain_ = nullptr;
  WhatIfPanel* whatif_ = nullptr;
  RunPanel* run_ = nullptr;
  ComparePanel* compare_ = nullptr;
  QUndoView* history_ = nullptr;
  QLineEdit* search_ = nullptr;
  QLabel* status_nodes_ = nullptr;
  QLabel* status_kernels_ = nullptr;
  QLabel* status_traffic_ = nullptr;
  QLabel* status_zoom_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QAction* mark_rejected_ = nullptr;
  QActionGroup* mode_actions_ = nullptr;
  ViewMode mode_ = ViewMode::fused;
  bool fit_pending_ = false;
  bool confirm_close_ = true;
  QElapsedTimer picture_timer_;
  double first_picture_s_ = 0.0;
  QString last_error_;
  int search_index_ = 0;
  QString search_text_;
};

}  // namespace fx::app
