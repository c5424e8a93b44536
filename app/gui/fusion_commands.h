// One QUndoCommand per user action on the plan. Each refers to the engine's candidates by id, never to
// scene items; the engine keeps the matching plan-level undo stack, so undo() and redo() step it.
#pragma once

#include <QUndoCommand>

namespace fx::app {

class Session;

// Base: the action has already been applied to the engine when the command is pushed, so the first
// redo() (QUndoStack::push calls it) does nothing; later ones replay through the engine's redo.
class EngineStepCommand : public QUndoCommand {
 public:
  EngineStepCommand(Session& session, const QString& text);
  void undo() override;
  void redo() override;

 private:
  Session& session_;
  bool first_ = true;
};

class AcceptCandidateCommand : public EngineStepCommand {
 public:
  AcceptCandidateCommand(Session& session, const QString& candidate_id);
  const QString& candidate_id() const { return id_; }

 private:
  QString id_;
};

class RejectCandidateCommand : public EngineStepCommand {
 public:
  RejectCandidateCommand(Session& session, const QString& candidate_id);
  const QString& candidate_id() const { return id_; }

 private:
  QString id_;
};

class AutoFuseCommand : public EngineStepCommand {
 public:
  AutoFuseCommand(Session& session, int merges);
};

}  // namespace fx::app
