"""Programs that ship their own modified copy of TensorFlow 1.x's `tpu_estimator.py` and import
it instead of TensorFlow's (see `tpu_estimator_compat/cli/vendored.py`: `check` names the fix)."""
import os

import numpy as np

from tiny_data import write_json, write_tfrecord
from recipes.program import Program, ckpt, seeded_rng

_TXL_LENGTH, _TXL_VOCAB = 8, 20


def _txl_records(data, rng, split, batch, cores, use_tpu, batches):
    """data_utils.py's layout: `record_info-<split>.bsz-B.tlen-T[.core-C].json` naming
    TFRecords of `inputs`/`labels` (the next token) of tgt_len ids, in batch order."""
    name = "%s.bsz-%d.tlen-%d" % (split, batch, _TXL_LENGTH) + (
        ".core-%d" % cores if use_tpu else "")
    stream = rng.randint(_TXL_VOCAB, size=batch * batches * _TXL_LENGTH + 1)
    write_tfrecord(os.path.join(data, "%s.tfrecords" % name), [
        {"inputs": stream[i * _TXL_LENGTH:(i + 1) * _TXL_LENGTH],
         "labels": stream[i * _TXL_LENGTH + 1:(i + 1) * _TXL_LENGTH + 1]}
        for i in range(batch * batches)])
    write_json(os.path.join(data, "record_info-%s.json" % name), {
        "filenames": ["%s.tfrecords" % name], "bin_sizes": [], "num_batch": batches})


def transformer_xl(work, use_tpu):
    rng = seeded_rng()
    data = os.path.join(work, "data")
    cores = 8 if use_tpu else 1
    for split in ("train", "valid"):
        _txl_records(data, rng, split, 8, cores, use_tpu, 2)
    write_json(os.path.join(data, "corpus-info.json"),
               {"vocab_size": _TXL_VOCAB, "cutoffs": [0, _TXL_VOCAB]})
    model_dir = os.path.join(work, "model")
    # Two steps, then evaluation (do_eval), a 1-layer Transformer-XL with a memory of 4.
    return ["--data_dir=" + data, "--record_info_dir=" + data,
            "--corpus_info_path=" + os.path.join(data, "corpus-info.json"),
            "--model_dir=" + model_dir, "--use_tpu=%s" % use_tpu,
            "--num_core_per_host=%d" % cores, "--train_batch_size=8", "--eval_batch_size=8",
            "--train_steps=2", "--iterations=1", "--save_steps=1", "--do_eval=true",
            "--tgt_len=%d" % _TXL_LENGTH, "--mem_len=4", "--n_layer=1", "--d_model=8",
            "--d_embed=8", "--n_head=2", "--d_head=4", "--d_inner=16", "--dropout=0.0",
            "--dropatt=0.0", "--warmup_steps=0"], [ckpt(model_dir, 2)]


_TXL_FORK = ("no run to check: tf/tpu_estimator.py's TPUEstimator is a fork of TensorFlow "
             "1.x's: it carries the Transformer-XL memories from step to step "
             "(train_cache_fn/eval_cache_fn, params['cache'], TPUEstimatorSpec.cache)")
_TXL_BPE_FORK = _TXL_FORK.replace("tf/tpu_estimator.py", "tpu_estimator.py")

PROGRAMS = [
    Program("transformer_xl", "kimiyoung/transformer-xl",
            "44781ed21dbaec88b280f74d9ae2877f52b492a5", "kimiyoung+transformer-xl",
            "train.py",
            "Transformer-XL LM training and evaluation (tf/train.py) through its own fork of "
            "TF 1.x's tpu_estimator.py (TensorFlow internals; recurrence memories carried "
            "across steps by train_cache_fn/eval_cache_fn), relative positional attention",
            transformer_xl, copy_from="tf", eval_only=_TXL_FORK, replica_check=_TXL_FORK),
    Program("transformer_xl_bpe", "chiayewken/transformer_xl",
            "b29461d929f1497fa537805368dd75507d37d40e", "chiayewken+transformer_xl",
            "train.py",
            "A research fork of Transformer-XL (BPE vocabularies, an LSTM variant, an "
            "eval-record hook writing through the session) with its own copy of "
            "transformer-xl's tpu_estimator.py fork, imported by train.py",
            transformer_xl, eval_only=_TXL_BPE_FORK, replica_check=_TXL_BPE_FORK),
]
