"""The device side: turns model_fn and input_fn into compiled device loops on a
tf.distribute strategy (runtime, batching, inputs, padding, model step, step graph, replicas
copied from replica 0, variable store, loops, TPU embeddings; `model_engine.ModelEngine`
assembles them). Knows nothing of checkpoint schedules or summaries, and imports nothing of
the host layer: the host drives it through the typed outputs it returns (`step_outputs`),
and places a call's hooks through the interface it takes in (`hook_placement`), giving them
what runs their session's fetches on the host (`session_runs`)."""
