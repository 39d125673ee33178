"""What persists between runs: TF1 name-based checkpoints (crash-safe saves, state-file
recovery), `.meta` graphs, warm start."""
