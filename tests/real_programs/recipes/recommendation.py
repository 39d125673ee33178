"""Recommendation: categorical features looked up in TPU embedding tables."""
import os

from tiny_data import write_tfrecord
from recipes.program import Program, ckpt, seeded_rng
from recipes.detection import TPU_COMMIT


def embedding_categorizer(work, use_tpu):  # pylint: disable=unused-argument  (TPU only)
    """Its create_data.py's format: ids of three variable-length categorical features (two
    sharing a 100-row table, one of a 1000-row table) and a label of 10 categories."""
    rng = seeded_rng()

    def examples(count):
        for _ in range(count):
            yield {"feature_1": rng.randint(100, size=rng.randint(1, 4)),
                   "feature_2": rng.randint(100, size=rng.randint(1, 4)),
                   "feature_3": rng.randint(1000, size=rng.randint(1, 4)),
                   "label": [rng.randint(10)]}

    data, model_dir = os.path.join(work, "data"), os.path.join(work, "model")
    for split, count in (("train", 1024), ("eval", 512)):
        for shard in range(2):
            write_tfrecord(os.path.join(data, "%s-%d.tfrecord" % (split, shard)),
                           examples(count // 2))
    # Its parameters are constants (global batch 512, 5 cycles of 100 steps and 10 eval
    # steps, use_tpu=True): only the paths are flags.
    argv = ["--model_dir=" + model_dir, "--train_dataset_path=" + os.path.join(data, "train-*"),
            "--eval_dataset_path=" + os.path.join(data, "eval-*")]
    return argv, [ckpt(model_dir, 500), os.path.join(model_dir, "eval")]


PROGRAMS = [
    Program("embedding_categorizer", "tensorflow/tpu", TPU_COMMIT, "tensorflow+tpu",
            "model.py", "TPU embeddings from feature columns (shared_embedding_columns, "
            "embedding_column with a sum combiner) in EmbeddingConfigSpec with Adagrad, "
            "DenseFeatures + Keras layers on Input(tensor=), recall@k metrics, "
            "train/evaluate cycles", embedding_categorizer,
            copy_from="models/experimental/embedding", tpu_only=True,
            eval_only="model.py trains steps_per_epoch more steps (a constant) before each "
            "evaluation: no evaluation without training",
            replica_check="no short run: steps and batch are constants of model.py (5 cycles "
            "of 100 steps of 512 examples); 500 Adam steps amplify rounding past any weight "
            "tolerance"),
]
