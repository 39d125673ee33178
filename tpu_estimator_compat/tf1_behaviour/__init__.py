"""TF1 behaviour on TensorFlow 2 objects, installed process-wide or around the user's code:
TF1 shapes and hashable variables for TF1 code, eager public calls in graph-mode programs,
TF1 entry points redirected while model_fn runs."""
