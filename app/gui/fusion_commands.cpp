#include "app/gui/fusion_commands.h"

#include "app/gui/session.h"

namespace fx::app {

PlanStepCommand::PlanStepCommand(Session& session, const QString& text, FusionEngine::State before)
    : session_(session), before_(std::move(before)) {
  setText(text);
}

void PlanStepCommand::undo() {
  after_ = session_.engine().state();
  session_.engine().restore(before_);
  session_.notify_plan_changed();
}

void PlanStepCommand::redo() {
  if (after_) session_.engine().restore(*after_);
  session_.notify_plan_changed();
}

AcceptCandidateCommand::AcceptCandidateCommand(Session& session, const QString& candidate_id,
                                               FusionEngine::State before)
    : PlanStepCommand(session, QObject::tr("Accept %1").arg(candidate_id), std::move(before)), id_(candidate_id) {}

RejectCandidateCommand::RejectCandidateCommand(Session& session, const QString& candidate_id,
                                               FusionEngine::State before)
    : PlanStepCommand(session, QObject::tr("Reject %1").arg(candidate_id), std::move(before)), id_(candidate_id) {}

AutoFuseCommand::AutoFuseCommand(Session& session, int merges, FusionEngine::State before)
    : PlanStepCommand(session, QObject::tr("Auto-fuse (%n merge(s))", nullptr, merges), std::move(before)) {}

}  // namespace fx::app
