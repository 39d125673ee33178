"""The host side: drives the engine's loops for train / evaluate / predict, runs hooks,
host_call and eval_metrics, writes summaries, keeps multi-worker processes in lockstep and
handles preemption."""
