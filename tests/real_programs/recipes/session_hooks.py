"""Programs whose hooks use the session: an EMA-loading hook (`begin()` builds
`assign_from_checkpoint_fn` over `ema.variables_to_restore()`, `after_create_session` runs it),
custom restore and init hooks (an initializable iterator's initializer run with a feed_dict of
the data in `after_create_session`)."""
import io
import os
import pickle

import numpy as np

from tiny_data import write_json, write_tfrecord
from recipes.program import Program, ckpt, seeded_rng, with_flags


def _gray_jpeg(rng, size):
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rng.randint(256, size=(size, size)).astype("uint8")).save(out, "JPEG")
    return out.getvalue()


def _deep_qc_records(path, rng, count):
    """aqc_training.py's records: three 224x224 grayscale JPEG views, a 0/1 `qc` label."""
    return write_tfrecord(path, [
        {"img1_jpeg": [_gray_jpeg(rng, 224)], "img2_jpeg": [_gray_jpeg(rng, 224)],
         "img3_jpeg": [_gray_jpeg(rng, 224)], "qc": [int(i % 2)], "subj": [i]}
        for i in range(count)])


def deep_qc(work, use_tpu):
    del use_tpu  # its use_tpu=True asserts gs:// paths: CPU only (has_use_tpu=False)
    rng = seeded_rng()
    data = os.path.join(work, "data")
    train = _deep_qc_records(os.path.join(data, "train.tfrecord"), rng, 4)
    val = _deep_qc_records(os.path.join(data, "val.tfrecord"), rng, 2)
    model_dir = os.path.join(work, "model")
    # One cycle: 2 steps of 2 (n_samples // batch_size), then evaluation on the moving
    # averages (LoadEMAHook reloads them from the latest checkpoint in after_create_session).
    return ["--training_data=" + train, "--validation_data=" + val, "--testing_data=" + val,
            "--model_dir=" + model_dir, "--batch_size=2", "--eval_batch_size=2",
            "--n_samples=4", "--n_val_samples=2", "--n_test_samples=2", "--train_epochs=1",
            "--eval_per_epoch=1", "--flavor=m", "--moving_average=true",
            "--use_tpu=false"], [ckpt(model_dir, 2)]


def deep_qc_eval_only(work, use_tpu):
    """`--testing`: evaluates its testing data (the validation file) with the same hook."""
    argv, _ = deep_qc(work, use_tpu)
    return with_flags(argv, {"testing": "true"})


def _cifar100_pickle(path, rng, count):
    """CIFAR-100's python pickle (`data`: rows of 3x32x32 uint8, `coarse_labels`): every one
    of the 20 coarse classes present (the program one-hot encodes them with sklearn's
    LabelBinarizer, whose width is the number of classes it sees)."""
    with open(path, "wb") as f:
        pickle.dump({b"data": rng.randint(256, size=(count, 3072)).astype("uint8"),
                     b"coarse_labels": [i % 20 for i in range(count)]}, f)


def dnn_cifar100(work, use_tpu):
    """train() 1 step, evaluate(), then train_and_evaluate() to --train_steps (3), each
    input's iterator initialised by InitHook in after_create_session (its placeholders fed
    the pickled arrays)."""
    del use_tpu  # a plain Estimator (has_use_tpu=False)
    rng = seeded_rng()
    data = os.path.join(work, "cifar-100-python")
    os.makedirs(data)
    _cifar100_pickle(os.path.join(data, "train"), rng, 40)
    _cifar100_pickle(os.path.join(data, "test"), rng, 20)
    model_dir = os.path.join(work, "model")
    return ["--cifar100_path=" + data, "--model_dir=" + model_dir, "--train_batch_size=8",
            "--eval_batch_size=10", "--train_steps=3", "--save_summary_steps=1",
            "--convolution_depths", "4", "8", "--fc_layers", "16"], [ckpt(model_dir, 3)]


def _rgb_jpeg(rng, height, width):
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rng.randint(256, size=(height, width, 3)).astype("uint8")).save(out, "JPEG")
    return out.getvalue()


def _face_records(path, rng, count):
    """create_tfrecords.py's records: a JPEG, its face box and 5 landmarks (x, y pairs),
    all in [0, 1], the landmarks inside the box."""
    examples = []
    for _ in range(count):
        ymin, xmin = rng.uniform(0.05, 0.2, size=2)
        ymax, xmax = rng.uniform(0.8, 0.95, size=2)
        ys = rng.uniform(ymin + 0.05, ymax - 0.05, size=5)
        xs = rng.uniform(xmin + 0.05, xmax - 0.05, size=5)
        examples.append({"image": [_rgb_jpeg(rng, 80, 72)], "ymin": [ymin], "xmin": [xmin],
                         "ymax": [ymax], "xmax": [xmax],
                         "landmarks": np.stack([ys, xs], axis=1).ravel().tolist()})
    return write_tfrecord(path, examples)


def wing_loss(work, use_tpu):
    """train.py reads ./config.json (the run's directory): 3 steps of 4 64x64 faces, then
    train_and_evaluate's final evaluation of the moving averages (RestoreMovingAverageHook:
    assign_from_checkpoint_fn over ema.variables_to_restore() in after_create_session)."""
    del use_tpu  # a plain Estimator (has_use_tpu=False)
    rng = seeded_rng()
    _face_records(os.path.join(work, "data", "train_shards", "shard-0000.tfrecords"), rng, 8)
    _face_records(os.path.join(work, "data", "val_shards", "shard-0000.tfrecords"), rng, 6)
    model_dir = os.path.join(work, "models", "run00")
    write_json(os.path.join(work, "config.json"), {
        "model_dir": model_dir, "num_landmarks": 5, "weight_decay": 1e-4, "epsilon": 2.0,
        "w": 10.0, "initial_lr": 4e-4, "image_size": [64, 64], "batch_size": 4,
        "train_dataset": os.path.join(work, "data", "train_shards"),
        "val_dataset": os.path.join(work, "data", "val_shards"), "num_steps": 3})
    return [], [ckpt(model_dir, 3)]


PROGRAMS = [
    Program("deep_qc", "vfonov/deep-qc", "c778a96ec778729fa2b7b5cba739b24a5b66abe5",
            "vfonov+deep-qc", "aqc_training.py",
            "MRI quality control (DARQ): three 224x224 views through one shared slim "
            "MobileNet v1, RMSProp + EMA train op, evaluation on the moving averages through a "
            "LoadEMAHook (assign_from_checkpoint_fn in after_create_session), eval_on_tpu=False "
            "with an EstimatorSpec (auc)", deep_qc, copy_from="python-tf",
            has_use_tpu=False, eval_only=deep_qc_eval_only,
            replica_check="no TPU run here: aqc_training.py asserts gs:// paths for "
            "--use_tpu (model_dir, training and validation data)"),
    Program("dnn_cifar100_init_hook", "lukasturcani/dnn",
            "bbf908fa471c45e312fac363e7b4c2f33d78431d", "lukasturcani+dnn",
            "dnn/tensorflow/train_scripts/cifar100/simple_cnn.py",
            "CNN (tf.layers conv/pool/dense, Adam, accuracy) on CIFAR-100 pickles: placeholders "
            "fed through from_tensor_slices into make_initializable_iterator, an InitHook "
            "running the iterator's initializer with its feed_dict in after_create_session "
            "(train, evaluate and train_and_evaluate hooks), argparse Namespace as params, "
            "f-strings",
            dnn_cifar100, has_use_tpu=False,
            eval_only="its evaluations are in no log: it leaves tf.logging at WARN and prints "
            "none of evaluate()'s results",
            replica_check="no TPU switch: a plain Estimator"),
    Program("wing_loss", "TropComplique/wing-loss", "d7335610d26cf805bf5a20ae0d70df5de85d1521",
            "TropComplique+wing-loss", "train.py",
            "facial landmarks (Wing loss, slim CNN with batch norm, Adam with cosine decay, EMA "
            "train op) from a JSON config: train_and_evaluate whose evaluation runs on the "
            "moving averages through a RestoreMovingAverageHook (assign_from_checkpoint_fn in "
            "after_create_session), NME metric", wing_loss, has_use_tpu=False,
            eval_only="train_and_evaluate is its only driver: run again on its model_dir it "
            "trains nothing, so evaluates nothing (TF1's run_local evaluates from the "
            "listener of the checkpoints it saves)",
            replica_check="no TPU switch: a plain Estimator"),
]
