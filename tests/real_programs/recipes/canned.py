"""Canned-estimator programs (TensorFlow's tutorials and their offspring): premade
DNN/Linear classifiers and regressors on feature columns over small CSV tables."""
import os

from recipes.program import seeded_rng, Program

IRIS_COLUMNS = ("SepalLength", "SepalWidth", "PetalLength", "PetalWidth")


def iris_csv(path, rng, count):
    """An iris CSV as TensorFlow's download has it: a header line (count, 4, species
    names), then four measurements and a species id per row, three separable clusters."""
    species = rng.randint(3, size=count)
    centres = [[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]]
    rows = [[round(c + rng.normal(0, 0.2), 1) for c in centres[s]] + [int(s)]
            for s in species]
    with open(path, "w") as f:
        f.write("%d,4,setosa,versicolor,virginica\n" % count)
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")
    return path


def temporary_directory(work):
    return {"TMPDIR": os.path.join(work, "tmp")}


def satioo_iris(work, use_tpu):
    """train.py reads ./iris_training.csv and ./iris_test.csv (the run's directory) and trains
    5000 steps (a constant) with no model_dir."""
    rng = seeded_rng()
    iris_csv(os.path.join(work, "iris_training.csv"), rng, 120)
    iris_csv(os.path.join(work, "iris_test.csv"), rng, 30)
    os.makedirs(temporary_directory(work)["TMPDIR"])
    return [], [os.path.join(work, "tmp", "tmp*", "model.ckpt-5000.index")]


def keras_cache_and_temporary_directory(work):
    """`tf.keras.utils.get_file`'s cache (~/.keras/datasets: a HOME of the run's own) and
    `tempfile`'s directory (an Estimator without model_dir) inside the run's directory."""
    return {"HOME": os.path.join(work, "home"), "TMPDIR": os.path.join(work, "tmp")}


def premade_iris(work, use_tpu):
    """iris_data.py downloads the iris CSVs with tf.keras.utils.get_file, which finds them
    in its cache; no model_dir."""
    places = keras_cache_and_temporary_directory(work)
    cache = os.path.join(places["HOME"], ".keras", "datasets")
    os.makedirs(cache)
    os.makedirs(places["TMPDIR"])
    rng = seeded_rng()
    iris_csv(os.path.join(cache, "iris_training.csv"), rng, 120)
    iris_csv(os.path.join(cache, "iris_test.csv"), rng, 30)
    return (["--batch_size=16", "--train_steps=5"],
            [os.path.join(places["TMPDIR"], "tmp*", "model.ckpt-5.index")])


PROGRAMS = [
    Program("premade_iris", "YCHEN-NYU/iris", "a9bf1793dd04c89d36e845cb38433936ec167446",
            "YCHEN-NYU+iris", "premade_estimator.py",
            "TensorFlow's get_started premade_estimator.py (samples/core, TF 1.x): "
            "tf.estimator.DNNClassifier on numeric feature columns, iris CSVs through "
            "tf.keras.utils.get_file + pandas, Dataset input_fns, train, evaluate, predict "
            "(class_ids, probabilities), tf.app.run", premade_iris, has_use_tpu=False,
            environ=keras_cache_and_temporary_directory,
            log_expects=(r"^Test set accuracy: [01]\.\d{3}$",
                         r'^Prediction is "(Setosa|Versicolor|Virginica)" \(\d+\.\d%\), '
                         r'expected "Virginica"$'),
            eval_only="premade_estimator.py trains before it evaluates (DNNClassifier "
            "without model_dir: a temporary directory per process)",
            replica_check="no TPU switch"),
    Program("iris_tf2_estimator", "SatioO/tf_2.0_estimator",
            "3148018e11749942876eb3a900664a95dc5a6c98", "SatioO+tf_2.0_estimator", "train.py",
            "TF 2.0-era script: tf.estimator.DNNClassifier (premade, numeric feature columns) "
            "on iris CSVs read with pandas, eager code around it (tf.random.set_seed, "
            "dataset.take(1) with .numpy()), train 5000 steps, evaluate",
            satioo_iris, has_use_tpu=False, tf2=True, environ=temporary_directory,
            log_expects=(r"^Test set accuracy: [01]\.\d{3}$",),
            eval_only="train.py trains before it evaluates (DNNClassifier without model_dir: "
            "a temporary directory per process)", replica_check="no TPU switch"),
]
