#include "app/gui/fusion_commands.h"

#include "app/gui/session.h"

namespace fx::app {

EngineStepCommand::EngineStepCommand(Session& session, const QString& text) : session_(session) { setText(text); }

void EngineStepCommand::undo() {
  session_.engine().undo();
  session_.notify_plan_changed();
}

void EngineStepCommand::redo() {
  if (first_) {
    first_ = false;
  } else {
    session_.engine().redo();
  }
  session_.notify_plan_changed();
}

AcceptCandidateCommand::AcceptCandidateCommand(Session& session, const QString& candidate_id)
    : EngineStepCommand(session, QObject::tr("Accept %1").arg(candidate_id)), id_(candidate_id) {}

RejectCandidateCommand::RejectCandidateCommand(Session& session, const QString& candidate_id)
    : EngineStepCommand(session, QObject::tr("Reject %1").arg(candidate_id)), id_(candidate_id) {}

AutoFuseCommand::AutoFuseCommand(Session& session, int merges)
    : EngineStepCommand(session, QObject::tr("Auto-fuse (%n merge(s))", nullptr, merges)) {}

}  // namespace fx::app
