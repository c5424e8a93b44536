// The main window: the graph view in the middle, docks for candidates, explanation, what-if, history and
// measurements; menus, shortcuts, recent files, samples, status bar. Panels live in their own files.
#pragma once

#include <QElapsedTimer>
#include <QFont>
#include <optional>
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
class QStackedWidget;
class QDockWidget;
class QJsonObject;

namespace fx::app {

class Breadcrumbs;
class CandidatesPanel;
class ComparePanel;
class ExplainPanel;
class Minimap;
class ScopeView;
class GraphScene;
class LessonPane;
class GraphView;
class LayoutRunner;
class RunPanel;
class SideBySideView;
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
  ExplainPanel* explain_panel() const { return explain_; }
  QDockWidget* explain_dock() const { return explain_dock_; }
  CandidatesPanel* candidates_panel() const { return candidates_; }
  SideBySideView* side_by_side_view() const { return side_; }
  void set_view_mode(ViewMode mode);
  ViewMode view_mode() const { return mode_; }
  // Before | After: the unfused and the fused graph in two synchronised panes (View menu, Ctrl+4).
  void set_side_by_side(bool on);
  bool side_by_side() const { return side_by_side_; }
  // The projector zoom: every font of the window and the graph, 1 = normal (View > Larger text, Ctrl+=).
  void set_ui_scale(double scale);
  double ui_scale() const { return ui_scale_; }
  void set_left_to_right(bool on);
  // Asks why the two selected nodes (or the selected edge's ends) are not fused; the answer goes to the
  // Explanation panel and onto the graph.
  void why_not_fused();
  const std::optional<PairExplanation>& last_answer() const { return last_answer_; }
  // Selects the two nodes by name and asks (--why-not on the command line); false if a name is unknown.
  bool ask_why_not(const QString& a, const QString& b);
  // Replaces the plan by a report's fusion section ("Load the measured plan"); false with a message if the
  // section does not fit the open graph.
  bool load_measured_plan(const QJsonObject& fusion);
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
  // File > Export > Session report: the HTML file of core/report/session_report.h; "" or why it failed.
  QString export_report(const QString& path);
  // Lessons menu: opens the lesson's sample graph on the lesson's device and shows its first step.
  bool open_lesson(const QString& path);
  LessonPane* lesson_pane() const { return lesson_; }
  // Large text and high contrast for a projector, with the lesson pane shown.
  void set_instructor_mode(bool on);
  bool instructor_mode() const { return instructor_mode_; }
  // Scripted runs (screenshots, timings) quit without asking to save.
  void set_confirm_close(bool on) { confirm_close_ = on; }

 signals:
  void picture_ready(double seconds);  // a layout was shown; seconds since the open (or relayout) began

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void build_docks();
  void build_menus();
  void build_file_menu();
  void build_view_menu();
  void build_fusion_menu();
  void build_help_menu();
  void build_lessons_menu();
  void on_lesson_action(int action);
  void fit_lesson_dock();
  void make_room_for_lesson(bool on);
  void apply_default_dock_sizes();
  void build_panels_menu(QMenu* view_menu);
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
  std::shared_ptr<const DrawnGraph> drawing_for(ViewMode mode) const;
  std::vector<GraphScene*> shown_scenes() const;
  GraphScene* selection_scene() const;
  void on_layout_finished(std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& result);
  void on_side_by_side_ready();
  void paint_measured();
  void show_answer(const std::vector<NodeId>& nodes);
  void on_plan_changed();
  void update_status();
  void update_title();
  void on_selection_changed();
  void search_next();
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
  QStackedWidget* central_ = nullptr;  // the single view, or Before | After
  SideBySideView* side_ = nullptr;
  std::vector<QDockWidget*> docks_;
  LayoutRunner* layout_;
  ScopeView* scopes_ = nullptr;
  Minimap* minimap_ = nullptr;
  Breadcrumbs* breadcrumbs_ = nullptr;
  std::vector<NodeId> changed_nodes_;  // nodes whose group an accept/reject changed: marked on the next picture
  CandidatesPanel* candidates_ = nullptr;
  ExplainPanel* explain_ = nullptr;
  QDockWidget* explain_dock_ = nullptr;
  WhatIfPanel* whatif_ = nullptr;
  RunPanel* run_ = nullptr;
  ComparePanel* compare_ = nullptr;
  QUndoView* history_ = nullptr;
  LessonPane* lesson_ = nullptr;
  QDockWidget* lesson_dock_ = nullptr;
  bool instructor_mode_ = false;
  std::vector<QDockWidget*> given_way_;
  bool docks_sized_ = false;  // by a restored window state, or by apply_default_dock_sizes on the first show  // right-hand docks closed for instructor mode, reopened after it
  QLineEdit* search_ = nullptr;
  QLabel* status_nodes_ = nullptr;
  QLabel* status_kernels_ = nullptr;
  QLabel* status_traffic_ = nullptr;
  QLabel* status_zoom_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  QAction* mark_rejected_ = nullptr;
  QActionGroup* mode_actions_ = nullptr;
  ViewMode mode_ = ViewMode::fused;
  bool side_by_side_ = false;
  bool left_to_right_ = false;
  double ui_scale_ = 1.0;
  QFont base_font_;
  QString graph_hash_;  // the open graph's content hash, for checking run reports
  std::optional<PairExplanation> last_answer_;
  bool fit_pending_ = false;
  bool confirm_close_ = true;
  QElapsedTimer picture_timer_;
  double first_picture_s_ = 0.0;
  QString last_error_;
  int search_index_ = 0;
  QString search_text_;
};

}  // namespace fx::app
