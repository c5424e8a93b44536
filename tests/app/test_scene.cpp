// Every sample loads and draws: one scene item per drawn box and edge, matching the graph; collapsed view
// has one box per kernel; a bad file reports located errors; the session round-trips through a save.
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QTemporaryDir>
#include <gtest/gtest.h>
#include <unistd.h>

#include "app/gui/exports.h"
#include "app/gui/graph_scene.h"
#include "app/gui/session.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

LoadedDocument load(const QString& path) {
  auto doc = load_document(path, DeviceDescription::h200());
  if (auto* failure = std::get_if<LoadFailure>(&doc)) throw std::runtime_error(failure->text().toStdString());
  return std::get<LoadedDocument>(std::move(doc));
}

std::size_t activation_inputs_read(const Graph& g) {
  std::size_t n = 0;
  for (const GraphInput& in : g.inputs()) n += in.role == Role::activation ? 1 : 0;
  return n;
}

TEST(Scene, EverySampleLoadsAndDrawsOneItemPerNodeAndEdge) {
  const QStringList files = QDir(QStringLiteral(FX_SOURCE_DIR "/sample_graphs")).entryList({"*.json"}, QDir::Files);
  ASSERT_GE(files.size(), 19);
  for (const QString& f : files) {
    SCOPED_TRACE(f.toStdString());
    Session session;
    session.set_document(load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/") + f));
    session.auto_fuse();
    const Graph& g = session.graph();
    for (ViewMode mode : {ViewMode::unfused, ViewMode::fused, ViewMode::collapsed}) {
      auto drawing = std::make_shared<const DrawnGraph>(build_drawing(g, session.group_infos(), mode));
      const LayoutResult layout = layout_with_dot(layout_input(*drawing));
      ASSERT_TRUE(layout.ok) << layout.error.toStdString();
      GraphScene scene;
      scene.show_drawing(drawing, layout);
      const std::size_t boxes = mode == ViewMode::collapsed
                                    ? static_cast<std::size_t>(session.engine().plan().groups().size())
                                    : static_cast<std::size_t>(g.num_nodes());
      EXPECT_EQ(scene.node_items().size(), boxes + activation_inputs_read(g));
      EXPECT_EQ(scene.edge_items().size(), drawing->edges.size());
      EXPECT_EQ(static_cast<std::size_t>(scene.items().size()),
                scene.node_items().size() + scene.edge_items().size() + 2 * scene.cluster_items().size());
      if (mode == ViewMode::unfused) {
        // Each tensor input of each node is one edge, except weights drawn inside their consumer.
        std::size_t edges = 0;
        for (NodeId n = 0; n < g.num_nodes(); ++n)
          for (ValueId v : g.tensor_inputs(n))
            edges += !g.is_input(v) || g.inputs()[static_cast<std::size_t>(v)].role == Role::activation;
        EXPECT_EQ(scene.edge_items().size(), edges);
      }
      // Every box sits inside the laid-out bounds.
      for (const NodeItem* item : scene.node_items()) EXPECT_TRUE(layout.bounds.adjusted(-1, -1, 1, 1).contains(item->pos()));
      // dot made every group's box wide enough for its title.
      for (const ClusterItem* c : scene.cluster_items()) {
        EXPECT_EQ(c->box(), c->laid_out_box()) << c->cluster().label.toStdString();
      }
      // No tensor-size label is written over a group's title (an edge entering a group from above crosses it).
      for (const EdgeItem* e : scene.edge_items()) {
        for (const ClusterItem* c : scene.cluster_items()) {
          EXPECT_FALSE(e->label_rect().intersects(c->title_rect()))
              << "label \"" << e->edge().label.toStdString() << "\" over a group title";
        }
      }
    }
  }
}

// A run's time and bytes on each group's title: beside it where they fit, else on a second line; groups dot
// placed apart stay apart (gpt2_block's q, k and v projections sit in a row), the titles stay above the boxes,
// and no tensor-size label lands on a title.
TEST(Scene, MeasuredTitlesKeepNeighbouringGroupsApart) {
  for (const char* sample : {"gpt2_block.json", "gpt2_block_hf.json", "swiglu_bf16.json", "conv_bn_relu.json"}) {
    SCOPED_TRACE(sample);
    Session session;
    session.set_document(load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/") + sample));
    session.auto_fuse();
    auto drawing = std::make_shared<const DrawnGraph>(build_drawing(session.graph(), session.group_infos(), ViewMode::fused));
    const LayoutResult layout = layout_with_dot(layout_input(*drawing));
    ASSERT_TRUE(layout.ok) << layout.error.toStdString();
    GraphScene scene;
    scene.show_drawing(drawing, layout);
    ASSERT_FALSE(scene.cluster_items().empty());
    scene.set_measured(std::vector<QString>(drawing->groups.size(), QStringLiteral("3 kernels: 93.8 µs · 155 MiB")));
    const auto& clusters = scene.cluster_items();
    for (std::size_t i = 0; i < clusters.size(); ++i) {
      for (std::size_t j = i + 1; j < clusters.size(); ++j) {
        if (clusters[i]->laid_out_box().intersects(clusters[j]->laid_out_box())) continue;
        EXPECT_FALSE(clusters[i]->box().intersects(clusters[j]->box()))
            << clusters[i]->cluster().label.toStdString() << " over " << clusters[j]->cluster().label.toStdString();
      }
      for (const NodeItem* n : scene.node_items()) {
        EXPECT_FALSE(clusters[i]->title_rect().intersects(n->sceneBoundingRect()))
            << clusters[i]->cluster().label.toStdString() << "'s title over a box";
      }
      for (const EdgeItem* e : scene.edge_items()) {
        EXPECT_FALSE(e->label_rect().intersects(clusters[i]->title_rect()))
            << "label \"" << e->edge().label.toStdString() << "\" over a group title";
      }
      // The title is drawn by its own item, above the edges that cross the band and under the boxes, and
      // follows the band when the measured line moves it.
      const ClusterTitleItem* title = clusters[i]->title_item();
      ASSERT_NE(title, nullptr);
      EXPECT_EQ(title->scene(), &scene);
      EXPECT_GT(title->zValue(), scene.edge_items().front()->zValue());
      EXPECT_LT(title->zValue(), scene.node_items().front()->zValue());
      EXPECT_TRUE(title->boundingRect().contains(clusters[i]->title_rect()));
      EXPECT_TRUE(title->toolTip().contains(QStringLiteral("93.8 µs"))) << title->toolTip().toStdString();
    }
  }
}

TEST(Scene, SearchSelectionAndRejectedMarks) {
  Session session;
  session.set_document(load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json")));
  auto drawing = std::make_shared<const DrawnGraph>(build_drawing(session.graph(), session.group_infos(), ViewMode::fused));
  GraphScene scene;
  scene.show_drawing(drawing, layout_with_dot(layout_input(*drawing)));
  const auto hits = scene.find_nodes(QStringLiteral("AD"));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(session.graph().node(hits[0]).name, "add");
  scene.item_for(hits[0])->setSelected(true);
  EXPECT_EQ(scene.selected_graph_nodes(), hits);
  const NodeId mul = *session.graph().find_node("mul");
  scene.mark_rejected({{mul, hits[0], QStringLiteral("USER_REJECTED"), QStringLiteral("rejected by the user")}});
  int marked = 0;
  for (const EdgeItem* e : scene.edge_items()) {
    marked += e->rejected() ? 1 : 0;
    if (e->rejected()) {
      EXPECT_TRUE(e->toolTip().contains(QStringLiteral("rejected by the user")));
    }
  }
  EXPECT_EQ(marked, 1);
}

TEST(Files, BadFileGivesLocatedErrors) {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("bad.json"));
  ASSERT_TRUE(write_text_file_atomic(path.toStdString(),
      R"({"format": "fusion-explorer/graph", "version": 1, "name": "bad", "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
          "nodes": [{"name": "y", "op": "relu", "inputs": ["nope"]}], "outputs": ["y"]})"));
  auto doc = load_document(path, DeviceDescription::h200());
  auto* failure = std::get_if<LoadFailure>(&doc);
  ASSERT_NE(failure, nullptr);
  ASSERT_FALSE(failure->errors.empty());
  EXPECT_EQ(failure->errors.front().pointer, "/nodes/0/inputs/0");
  EXPECT_TRUE(failure->text().contains(QStringLiteral("bad.json")));
}

TEST(Files, SessionSaveRoundTripRestoresThePlan) {
  QTemporaryDir dir;
  Session session;
  session.set_document(load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/softmax_decomposed.json")));
  ASSERT_GT(session.auto_fuse(), 0);
  const QString path = dir.filePath(QStringLiteral("s.fused.json"));
  ASSERT_EQ(session.save(path), QString());
  EXPECT_FALSE(session.modified());
  const LoadedDocument again = load(path);
  EXPECT_EQ(again.engine->plan(), session.engine().plan());
  EXPECT_EQ(*again.graph, session.graph());
}

TEST(Files, DotAndSvgExports) {
  QTemporaryDir dir;
  Session session;
  session.set_document(load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json")));
  session.auto_fuse();
  const std::string dot = plan_to_dot(session.engine());
  EXPECT_NE(dot.find("subgraph \"cluster_g0\""), std::string::npos);
  EXPECT_NE(dot.find("g:mul"), std::string::npos);  // the group id in the cluster label
  EXPECT_NE(dot.find("relu"), std::string::npos);
  auto drawing = std::make_shared<const DrawnGraph>(build_drawing(session.graph(), session.group_infos(), ViewMode::fused));
  GraphScene scene;
  scene.show_drawing(drawing, layout_with_dot(layout_input(*drawing)));
  const QString svg = dir.filePath(QStringLiteral("v.svg"));
  ASSERT_EQ(export_scene_svg(scene, svg), QString());
  auto text = read_text_file(svg.toStdString(), 1 << 24);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("<svg"), std::string::npos);
  EXPECT_NE(text->find("relu"), std::string::npos);  // the node text is in the vector output
  const QString png = dir.filePath(QStringLiteral("v.png"));
  ASSERT_EQ(export_scene_png(scene, png), QString());
  EXPECT_FALSE(QImage(png).isNull());

  // An export over a file with another hard link rewrites it: both names see the new picture.
  const QString linked = dir.filePath(QStringLiteral("linked.svg"));
  ASSERT_EQ(::link(svg.toLocal8Bit().constData(), linked.toLocal8Bit().constData()), 0);
  ASSERT_EQ(write_file_atomic(svg, QByteArrayLiteral("old")), QString());
  ASSERT_EQ(export_scene_svg(scene, svg), QString());
  auto via_link = read_text_file(linked.toStdString(), 1 << 24);
  ASSERT_TRUE(via_link.ok());
  EXPECT_NE(via_link->find("<svg"), std::string::npos);
  EXPECT_EQ(QFileInfo(svg).size(), QFileInfo(linked).size());
}

}  // namespace
}  // namespace fx::app
