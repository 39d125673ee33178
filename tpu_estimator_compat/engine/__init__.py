"""The device side: turns model_fn and input_fn into compiled device loops on a
tf.distribute strategy (runtime, batching, inputs, padding, model step, step graph, variable
store, loops; `model_engine.ModelEngine` assembles them). Knows nothing of hooks, checkpoint
schedules or summaries: the host layer drives it through the step outputs it returns."""
