"""Tune: a search of vLLM's engine arguments on the user's own workload (Optuna), each trial a real
engine start through the app's engine path. No Qt."""
