// One QUndoCommand per user action on the plan. The QUndoStack owns the plan's history: each command holds
// the engine's State from before its action and, once undone, the State after it, and moves the engine
// between the two. The engine keeps no history of its own, so the two cannot drift apart.
#pragma once

#include <QUndoCommand>
#include <optional>

#include "core/fusion/engine.h"

namespace fx::app {

class Session;

// Base: the action has already been applied to the engine when the command is pushed, so the first
// redo() (QUndoStack::push calls it) leaves the engine as it is.
class PlanStepCommand : public QUndoCommand {
 public:
  PlanStepCommand(Session& session, const QString& text, FusionEngine::State before);
  void undo() override;
  void redo() override;

 private:
  Session& session_;
  FusionEngine::State before_;
  std::optional<FusionEngine::State> after_;  // set by undo(); redo() restores it
};

class AcceptCandidateCommand : public PlanStepCommand {
 public:
  AcceptCandidateCommand(Session& session, const QString& candidate_id, FusionEngine::State before);
  const QString& candidate_id() const { return id_; }

 private:
  QString id_;
};

class RejectCandidateCommand : public PlanStepCommand {
 public:
  RejectCandidateCommand(Session& session, const QString& candidate_id, FusionEngine::State before);
  const QString& candidate_id() const { return id_; }

 private:
  QString id_;
};

class AutoFuseCommand : public PlanStepCommand {
 public:
  AutoFuseCommand(Session& session, int merges, FusionEngine::State before);
};

}  // namespace fx::app
