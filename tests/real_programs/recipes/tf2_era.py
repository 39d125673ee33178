"""Estimator programs of the TensorFlow 2 era: TensorFlow's migration guides (notebooks of
tensorflow/docs, each an Estimator half in `tf.compat.v1` and a Keras half in TF2), run as
the scripts their code cells make, on the in-memory data they define themselves; BLEURT's
fine-tuning (`tensorflow.compat.v1`, TF 2.x's estimator package names)."""
import json
import os

from tiny_data import bert_config, sentence, tfds_iris, write_json, write_vocab
from recipes.canned import iris_csv
from recipes.program import Program, ckpt, seeded_rng

DOCS = ("tensorflow/docs", "7c3650212740204359d4ceae481abc79345541be", "tensorflow+docs")
GUIDES = "site/en/guide/migrate"
NO_MODEL_DIR = ("its Estimator has no model_dir (a temporary directory per process) and "
                "trains before it evaluates")


def temporary_directory(work):
    """The guides' Estimators write into `tempfile.mkdtemp()` (no model_dir): here."""
    return {"TMPDIR": os.path.join(work, "tmp")}


def trained_to(step):
    """`prepare` for a guide: no arguments; its Estimator's checkpoint at `step` in a
    temporary directory of the run's own."""
    def prepare(work, use_tpu):
        tmp = temporary_directory(work)["TMPDIR"]
        os.makedirs(tmp, exist_ok=True)
        return [], [os.path.join(tmp, "tmp*", "model.ckpt-%d.index" % step)]
    return prepare


def guide(name, exercises, steps, log_expects, eval_only=NO_MODEL_DIR):
    return Program(name, *DOCS, name + ".py", exercises, trained_to(steps), copy_from=GUIDES,
                   notebook=name + ".ipynb", tf2=True, has_use_tpu=False,
                   environ=temporary_directory, log_expects=log_expects,
                   eval_only=eval_only, replica_check="no TPU switch")


NUMBER = r"-?[0-9.]+(e-?[0-9]+)?"
# What the notebook displays of `estimator.evaluate(...)` and Keras' `evaluate(return_dict=True)`.
ESTIMATOR_EVALUATION = (r"^Out: \{'loss': (np.float32\()?%s\)?, "
                        r"'global_step': (np.int64\()?3\)?\}$" % NUMBER)
KERAS_EVALUATION = r"^Out: \{'loss': %s\}$" % NUMBER

PROGRAMS = [
    guide("migrating_estimator", "TF2 notebook (migration guide): tf.compat.v1 Estimator "
          "with tf1.layers.Dense, Adagrad, train then evaluate (model_dir=None); then the same "
          "model in tf.keras (fit, evaluate, a custom train_step)", 3,
          (ESTIMATOR_EVALUATION, KERAS_EVALUATION)),
    guide("sessionrunhook_callback", "TF2 notebook (migration guide): a SessionRunHook "
          "subclass timing steps in begin/before_run/after_run around tf1 Estimator training "
          "(300 steps); then a Keras callback", 300,
          (r"^Time: .*, Step #: 290 , Examples per second: ",)),
    guide("mirrored_strategy", "TF2 notebook (migration guide): tf1.distribute."
          "MirroredStrategy as RunConfig's train_distribute/eval_distribute, "
          "tf1.estimator.train_and_evaluate; then Keras under tf.distribute.MirroredStrategy",
          3, (r"^Out: \(\{'loss': (np.float32\()?%s\)?, 'global_step': (np.int64\()?3\)?\}, "
              r"\[\]\)$" % NUMBER,)),  # train_and_evaluate's (evaluation, exports)
    guide("metrics_optimizers", "TF2 notebook (migration guide): tf1.metrics.accuracy in "
          "eval_metric_ops, tf1.estimator.add_metrics (mean_squared_error), "
          "sparse_softmax_cross_entropy; then Keras metrics", 3,
          (r"^Out: \{'accuracy': (np.float32\()?(0.0|0.33333334|0.6666667|1.0)\)?, "
           r"'loss': (np.float32\()?%s\)?, 'global_step': (np.int64\()?3\)?\}$" % NUMBER,
           r"'mean_squared_error': (np.float32\()?%s\)?" % NUMBER)),
    guide("logging_stop_hook", "TF2 notebook (migration guide): training_hooks in "
          "EstimatorSpec: StopAtStepHook(num_steps=2), LoggingTensorHook over a list of "
          "tensors (tf.identity of the layer's weights) and a dict keyed by name; then Keras "
          "callbacks", 2, (r"^stop training now$",)),
]


def bleurt_finetune(work, use_tpu):
    """finetune.py's inputs: rating JSONL files (candidate, reference, score), a WordPiece
    vocabulary, a BERT config and the --init_checkpoint it requires (a name-based checkpoint
    of the word embeddings); 2 steps, evaluated and exported (BestExporter) at step 2."""
    rng = seeded_rng()
    data = os.path.join(work, "data")
    os.makedirs(data)
    for split, count in (("train", 8), ("dev", 4)):
        with open(os.path.join(data, split + ".jsonl"), "w") as f:
            for _ in range(count):
                f.write(json.dumps({"candidate": sentence(rng, 5), "reference": sentence(rng, 5),
                                    "score": round(float(rng.rand()), 3)}) + "\n")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab, seq=16))
    import tensorflow as tf  # real TensorFlow, eagerly, to write the checkpoint

    init = os.path.join(work, "init", "bert_model.ckpt")
    tf.raw_ops.SaveV2(prefix=init, tensor_names=["bert/embeddings/word_embeddings"],
                      shape_and_slices=[""], tensors=[rng.rand(vocab, 16).astype("float32")])
    model_dir = os.path.join(work, "model")
    return (["--train_set=" + os.path.join(data, "train.jsonl"),
             "--dev_set=" + os.path.join(data, "dev.jsonl"), "--model_dir=" + model_dir,
             "--vocab_file=" + os.path.join(work, "vocab.txt"), "--do_lower_case=true",
             "--max_seq_length=16", "--bert_config_file=" + os.path.join(work, "bert_config.json"),
             "--init_checkpoint=" + init, "--num_train_steps=2", "--save_checkpoints_steps=2",
             "--batch_size=2", "--eval_batch_size=2", "--num_eval_steps=1"],
            [ckpt(model_dir, 2),
             os.path.join(model_dir, "export", "bleurt_best", "*", "bleurt_config.json")])


PROGRAMS.append(Program(
    "bleurt_finetune", "google-research/bleurt", "cebe7e6f996b40910cfaa520a63db47807e3bf5c",
    "google-research+bleurt", "bleurt/finetune.py",
    "BLEURT fine-tuning (TF 2.x era, tensorflow.compat.v1): BERT regression head initialised "
    "from a checkpoint (init_from_checkpoint), train_and_evaluate with a BestExporter "
    "(event-file comparator, raw serving input), tf_slim streaming metrics, scipy Kendall "
    "tau, tf.disable_eager_execution, then its checkpoint finalized from the export",
    bleurt_finetune, has_use_tpu=False,
    log_expects=(r"Saving dict for global step 2: correlation = %s, .*kendalltau = %s, "
                 % (NUMBER, NUMBER),),
    eval_only="finetune.py runs train_and_evaluate: no evaluation without training",
    replica_check="no TPU switch"))


def premade_tutorial(work, use_tpu):
    """The iris CSVs in tf.keras.utils.get_file's cache (a HOME of the run's own); 5000 steps
    (a constant) with no model_dir."""
    home, tmp = os.path.join(work, "home"), os.path.join(work, "tmp")
    cache = os.path.join(home, ".keras", "datasets")
    os.makedirs(cache)
    os.makedirs(tmp)
    rng = seeded_rng()
    iris_csv(os.path.join(cache, "iris_training.csv"), rng, 120)
    iris_csv(os.path.join(cache, "iris_test.csv"), rng, 30)
    return [], [os.path.join(tmp, "tmp*", "model.ckpt-5000.index")]


PROGRAMS.append(Program(
    "premade_tutorial", *DOCS, "premade.py",
    "TensorFlow 2's premade-estimator tutorial (notebook): tf.estimator.DNNClassifier on iris "
    "through tf.keras.utils.get_file + pandas, train 5000 steps, evaluate, predict; "
    "no TF2-only name, so the runner serves it TF1's estimator (TF 2.15 ran the V2 class)",
    premade_tutorial, copy_from="site/en/tutorials/estimator", notebook="premade.ipynb",
    has_use_tpu=False,
    environ=lambda work: {"HOME": os.path.join(work, "home"), "TMPDIR": os.path.join(work, "tmp")},
    log_expects=(r"^Test set accuracy: [01]\.\d{3}$",
                 r"^Prediction is \"(Setosa|Versicolor|Virginica)\" \(\d+\.\d%\), "
                 r"expected \"Virginica\"$"),
    eval_only=NO_MODEL_DIR, replica_check="no TPU switch"))


def keras_to_estimator(work, use_tpu):
    """TFDS's iris prepared offline (TFDS_DATA_DIR); 500 steps (a constant) into a
    tempfile.mkdtemp() model_dir."""
    places = tfds_and_temporary_directory(work)
    tfds_iris(places["TFDS_DATA_DIR"], seeded_rng())
    os.makedirs(places["TMPDIR"])
    return [], [os.path.join(places["TMPDIR"], "tmp*", "keras", "keras_model.ckpt.index"),
                os.path.join(places["TMPDIR"], "tmp*", "model.ckpt-500.index")]


def tfds_and_temporary_directory(work):
    return {"TFDS_DATA_DIR": os.path.join(work, "tfds"), "TMPDIR": os.path.join(work, "tmp")}


PROGRAMS.append(Program(
    "keras_to_estimator_tutorial", *DOCS, "keras_model_to_estimator.py",
    "TensorFlow 2's Keras-model-to-Estimator tutorial (notebook): a compiled "
    "tf.keras.Sequential (Dense, Dropout) through tf.keras.estimator.model_to_estimator, "
    "TFDS iris mapped to the model's input name, train 500 steps, evaluate",
    keras_to_estimator, copy_from="site/en/tutorials/estimator",
    notebook="keras_model_to_estimator.ipynb", has_use_tpu=False,
    environ=tfds_and_temporary_directory,
    log_expects=(r"^Eval result: \{(?=.*'loss': (np.float32\()?%s\)?[,}])"
                 r"(?=.*'global_step': (np.int64\()?500\)?[,}])" % NUMBER,),
    eval_only=NO_MODEL_DIR, replica_check="no TPU switch"))

