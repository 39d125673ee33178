"""`tf.contrib.crf`: TF 1.x's linear-chain CRF, all of its names
(`rebuilt_apis/contrib_crf.py`)."""
from tpu_estimator_compat.v1 import _lazy

NAMES = ("crf_binary_score", "crf_decode", "crf_log_likelihood", "crf_log_norm",
         "crf_multitag_sequence_score", "crf_sequence_score", "crf_unary_score",
         "CrfDecodeBackwardRnnCell", "CrfDecodeForwardRnnCell", "CrfForwardRnnCell",
         "viterbi_decode")

_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.rebuilt_apis.contrib_crf:{name}" for name in NAMES},
)
