"""RunConfig and TPUConfig: what the user configures, validated when constructed, and the
facts derived from the environment (TF_CONFIG, model_dir)."""
