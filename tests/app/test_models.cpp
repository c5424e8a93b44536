// The candidates model under QAbstractItemModelTester, and accept/reject/auto-fuse undo/redo round trips.
#include <QAbstractItemModelTester>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "app/gui/candidates_model.h"
#include "app/gui/session.h"

namespace fx::app {
namespace {

Session* open_sample(const char* name) {
  auto* session = new Session;
  auto doc = load_document(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/") + name, DeviceDescription::h200());
  if (auto* failure = std::get_if<LoadFailure>(&doc)) {
    ADD_FAILURE() << failure->text().toStdString();
    return session;
  }
  session->set_document(std::get<LoadedDocument>(std::move(doc)));
  return session;
}

int first_fusible(const CandidatesModel& model) {
  for (int r = 0; r < model.rowCount(); ++r)
    if (model.candidate(r).decision.fuse) return r;
  return -1;
}

TEST(CandidatesModel, PassesModelTesterAcrossPlanChanges) {
  std::unique_ptr<Session> session(open_sample("sigmoid_chain.json"));
  CandidatesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.refresh(&session->engine());
  ASSERT_GT(model.rowCount(), 0);
  EXPECT_EQ(model.columnCount(), CandidatesModel::kColumnCount);
  const int row = first_fusible(model);
  ASSERT_GE(row, 0);
  const QString id = model.index(row, CandidatesModel::kId).data().toString();
  EXPECT_EQ(model.index(row, 0).data(CandidatesModel::CandidateIdRole).toString(), id);
  EXPECT_EQ(model.index(row, CandidatesModel::kVerdict).data().toString(), QStringLiteral("fuse"));
  EXPECT_TRUE(session->accept(id).fuse);
  model.refresh(&session->engine());
  EXPECT_EQ(model.row_of(id), -1);  // a merged candidate is gone from the new plan's list
  model.refresh(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(UndoCommands, AcceptUndoRedoRoundTrip) {
  std::unique_ptr<Session> session(open_sample("relu_mul_add.json"));
  QSignalSpy changed(session.get(), &Session::plan_changed);
  const Plan unfused = session->engine().plan();
  const auto candidates = session->engine().candidates();
  auto it = std::find_if(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.decision.fuse; });
  ASSERT_NE(it, candidates.end());
  ASSERT_TRUE(session->accept(QString::fromStdString(it->id)).fuse);
  const Plan fused = session->engine().plan();
  EXPECT_LT(fused.kernel_count(), unfused.kernel_count());
  EXPECT_EQ(session->undo_stack()->count(), 1);
  EXPECT_TRUE(session->modified());

  session->undo_stack()->undo();
  EXPECT_EQ(session->engine().plan(), unfused);
  EXPECT_FALSE(session->modified());
  session->undo_stack()->redo();
  EXPECT_EQ(session->engine().plan(), fused);
  EXPECT_GE(changed.count(), 3);
}

TEST(UndoCommands, RejectIsOneUndoStepAndAutoFuseSkipsIt) {
  std::unique_ptr<Session> session(open_sample("relu_mul_add.json"));
  const auto candidates = session->engine().candidates();
  ASSERT_FALSE(candidates.empty());
  const QString id = QString::fromStdString(candidates.front().id);
  session->reject(id);
  EXPECT_EQ(session->undo_stack()->count(), 1);
  EXPECT_EQ(session->engine().rejected_ids().count(id.toStdString()), 1u);
  session->undo_stack()->undo();
  EXPECT_EQ(session->engine().rejected_ids().count(id.toStdString()), 0u);
  session->undo_stack()->redo();
  EXPECT_EQ(session->engine().rejected_ids().count(id.toStdString()), 1u);
}

TEST(UndoCommands, AutoFuseIsOneStep) {
  std::unique_ptr<Session> session(open_sample("gelu_tanh_decomposed.json"));
  const Plan unfused = session->engine().plan();
  const int merges = session->auto_fuse();
  ASSERT_GT(merges, 0);
  EXPECT_EQ(session->undo_stack()->count(), 1);
  EXPECT_EQ(session->engine().plan().kernel_count(), 1);
  session->undo_stack()->undo();
  EXPECT_EQ(session->engine().plan(), unfused);
  session->undo_stack()->redo();
  EXPECT_EQ(session->engine().plan().kernel_count(), 1);
}

// The QUndoStack owns the history: after any mix of actions, including ones that push no command (an
// auto-fuse with nothing left to merge, a reject of an unknown id), undoing every step walks back through
// exactly the states the engine had, and redoing walks forward again.
TEST(UndoCommands, UndoAndRedoWalkThroughTheRecordedStatesWhateverTheActions) {
  std::unique_ptr<Session> session(open_sample("relu_mul_add.json"));
  std::vector<FusionEngine::State> states = {session->engine().state()};
  ASSERT_TRUE(session->accept(QStringLiteral("v:mul+add")).fuse);
  states.push_back(session->engine().state());
  EXPECT_FALSE(session->reject(QStringLiteral("v:no+such")).fuse);
  EXPECT_EQ(session->undo_stack()->count(), 1) << "a refused reject is no step";
  ASSERT_GT(session->auto_fuse(), 0);
  states.push_back(session->engine().state());
  EXPECT_EQ(session->auto_fuse(), 0);  // nothing left: no step, and the last step stays the auto-fuse
  ASSERT_EQ(session->undo_stack()->count(), 2);
  for (std::size_t i = states.size() - 1; i-- > 0;) {
    session->undo_stack()->undo();
    EXPECT_EQ(session->engine().plan(), states[i].plan) << "after undoing to step " << i;
    EXPECT_EQ(session->engine().state().step, states[i].step);
  }
  EXPECT_FALSE(session->undo_stack()->canUndo());
  for (std::size_t i = 1; i < states.size(); ++i) {
    session->undo_stack()->redo();
    EXPECT_EQ(session->engine().plan(), states[i].plan) << "after redoing to step " << i;
    EXPECT_EQ(session->engine().rejected_ids(), states[i].rejected);
  }
  EXPECT_FALSE(session->undo_stack()->canRedo());
}

// Crash protection: a modified session is written to the autosave file after every change and restores its
// plan; returning to the saved state, saving or closing removes the file.
TEST(Autosave, FollowsEveryChangeAndRestoresThePlan) {
  QTemporaryDir dir;
  const QString autosave = dir.filePath(QStringLiteral("autosave.fused.json"));
  std::unique_ptr<Session> session(open_sample("gelu_tanh_decomposed.json"));
  session->enable_autosave(autosave);
  EXPECT_FALSE(QFileInfo::exists(autosave)) << "nothing to protect before the first change";
  ASSERT_GT(session->auto_fuse(), 0);
  ASSERT_TRUE(QFileInfo::exists(autosave));
  auto restored = load_document(autosave, DeviceDescription::h200());
  ASSERT_TRUE(std::holds_alternative<LoadedDocument>(restored)) << std::get<LoadFailure>(restored).text().toStdString();
  EXPECT_EQ(std::get<LoadedDocument>(restored).engine->plan(), session->engine().plan());
  session->undo_stack()->undo();  // back to the state on disk: nothing left to lose
  EXPECT_FALSE(QFileInfo::exists(autosave));
  session->undo_stack()->redo();
  EXPECT_TRUE(QFileInfo::exists(autosave));
  ASSERT_TRUE(session->save(dir.filePath(QStringLiteral("saved.fused.json"))).isEmpty());
  EXPECT_FALSE(QFileInfo::exists(autosave));
  session->undo_stack()->undo();
  EXPECT_TRUE(QFileInfo::exists(autosave));
  session->close_document();
  EXPECT_FALSE(QFileInfo::exists(autosave));
}

}  // namespace
}  // namespace fx::app
