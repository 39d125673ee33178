"""Canned-estimator programs (TensorFlow's tutorials and their offspring): premade
DNN/Linear classifiers and regressors on feature columns over small CSV tables."""
import os

from recipes.program import seeded_rng, Program

NUMBER = r"-?[0-9.]+(e-?[0-9]+)?"

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


CENSUS_CATEGORIES = (
    ("workclass", ("Private", "Self-emp-not-inc", "State-gov", "?")),
    ("education", ("Bachelors", "HS-grad", "Masters", "11th")),
    ("marital_status", ("Married-civ-spouse", "Never-married", "Divorced")),
    ("occupation", ("Adm-clerical", "Exec-managerial", "Prof-specialty")),
    ("relationship", ("Husband", "Not-in-family", "Own-child")),
    ("race", ("White", "Black", "Asian-Pac-Islander")),
    ("gender", ("Male", "Female")),
    ("native_country", ("United-States", "India", "Mexico")))


def census_csv(path, rng, count):
    """Census income rows (adult.data's 15 columns) as the programs' data_download.py writes
    them (", " -> ","; no trailing "."), the label `>50K` for the older half."""
    pick = {name: values for name, values in CENSUS_CATEGORIES}
    lines = []
    for _ in range(count):
        age = int(rng.randint(18, 70))
        choice = {name: values[rng.randint(len(values))] for name, values in pick.items()}
        row = [age, choice["workclass"], int(rng.randint(20000, 400000)), choice["education"],
               int(rng.randint(5, 16)), choice["marital_status"], choice["occupation"],
               choice["relationship"], choice["race"], choice["gender"],
               int(rng.choice([0, 0, 2174, 7688])), 0, int(rng.randint(10, 60)),
               choice["native_country"], ">50K" if age > 44 else "<=50K"]
        lines.append(",".join(str(v) for v in row))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def census_wide_deep(data_dir, model_dir, exported=None):
    """`prepare` for a copy of the wide & deep tutorial's wide_deep.py (tensorflow/models'
    official/wide_deep, TF 1.4-1.6): census CSVs in `data_dir`, one epoch of batches of 8,
    evaluated once; its `model_dir`."""
    def prepare(work, use_tpu):
        rng = seeded_rng()
        data = os.path.join(work, data_dir)
        train = census_csv(os.path.join(data, "adult.data"), rng, 40)
        test = census_csv(os.path.join(data, "adult.test"), rng, 16)
        model = os.path.join(work, model_dir)
        argv = ["--model_dir=" + model, "--model_type=wide_deep", "--train_epochs=1",
                "--epochs_per_eval=1", "--batch_size=8", "--train_data=" + train,
                "--test_data=" + test]
        expected = [os.path.join(model, "model.ckpt-5.index")]
        if exported:
            expected.append(os.path.join(work, exported, "*", "saved_model.pbtxt"))
        return argv, expected
    return prepare


def regression_csv(path, rng, count, target=True):
    """01-Regression_from_csv.py's rows: key, x, y, alpha, beta[, target] (no header)."""
    with open(path, "w") as f:
        for key in range(count):
            x, y = rng.uniform(-1, 1, size=2)
            alpha, beta = "ax0%d" % rng.randint(1, 3), "bx0%d" % rng.randint(1, 3)
            row = [key, x, y, alpha, beta] + ([3 * x - 2 * y + (alpha == "ax02")]
                                             if target else [])
            f.write(",".join(str(v) for v in row) + "\n")
    return path


# JunGao95/Estimator_exercise's scripts name their files Windows-style ('data\\x.csv',
# 'trained_model\\NAME'): on Linux, files of those names in the run's directory.
def jungao_regression(work, use_tpu):
    """No flags: 100 epochs (a constant) of batches of 500 over 50 rows: 10 steps."""
    rng = seeded_rng()
    regression_csv(os.path.join(work, "data\\train-data.csv"), rng, 50)
    regression_csv(os.path.join(work, "data\\test-data.csv"), rng, 20)
    regression_csv(os.path.join(work, "data\\valid-data.csv"), rng, 10, target=False)
    return [], [os.path.join(work, "trained_model\\01_Regression_from_csv",
                             "model.ckpt-10.index")]


def jungao_iris(work, use_tpu):
    """The iris CSVs in tf.keras.utils.get_file's cache under the names it asks for; 1000
    steps (a constant)."""
    cache = os.path.join(keras_cache_and_temporary_directory(work)["HOME"], ".keras",
                         "datasets")
    os.makedirs(cache)
    rng = seeded_rng()
    iris_csv(os.path.join(cache, "data\\iris_training.csv"), rng, 120)
    iris_csv(os.path.join(cache, "data\\iris_test.csv"), rng, 30)
    return [], [os.path.join(work, "trained_model\\02-Classifier_with_premade_estimator\\",
                             "model.ckpt-1000.index")]


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


EVALUATED_ONCE = (r"^Results at epoch 1$", r"^accuracy: [01]\.\d+$", r"^auc: ",
                  r"^global_step: 5$")
WIDE_DEEP_EVAL = ("wide_deep.py deletes its model_dir (shutil.rmtree) and trains before "
                  "every evaluation: no evaluation without training")

JUNGAO = ("JunGao95/Estimator_exercise", "ba31f319123739c4bd50c7e7e21ae2bb53b54ffa",
          "JunGao95+Estimator_exercise")
# The dict evaluate() returns, printed: `metric` and the global step, in any order.
EVALUATION = (r"^\{(?=.*'%s': (np.float32\()?%s\)?[,}])"
              r"(?=.*'global_step': (np.int64\()?%d\)?[,}]).*\}$")
JUNGAO_EVAL = ("%s before it evaluates, in one process without flags: no evaluation "
               "without training")

PROGRAMS = [
    Program("jungao_dnn_regressor", *JUNGAO, "01-Regression_from_csv.py",
            "tf.estimator.DNNRegressor (AdamOptimizer, elu, dropout argument) over indicator "
            "columns of vocabulary lists and their crossed_column, TextLineDataset + decode_csv "
            "input_fn taking mode, tf.contrib.training.HParams, evaluate, predict from a "
            "label-less CSV", jungao_regression, has_use_tpu=False,
            log_expects=(EVALUATION % ("average_loss", NUMBER, 10),
                         r"^\[\{'predictions': array\(\[%s\], dtype=float32\)\}" % NUMBER),
            eval_only=JUNGAO_EVAL % "01-Regression_from_csv.py trains 100 epochs (a constant)",
            replica_check="no TPU switch"),
    Program("jungao_premade_iris", *JUNGAO, "02-Classifier_with_premade_estimator.py",
            "tf.estimator.DNNClassifier on iris through tf.keras.utils.get_file (fname with a "
            "directory) + pandas, 1000 steps, evaluate, predict (logits, probabilities, "
            "class_ids, classes, all_class_ids)", jungao_iris, has_use_tpu=False,
            environ=keras_cache_and_temporary_directory,
            log_expects=(EVALUATION % ("accuracy", r"[01]\.\d+", 1000),
                         r"'class_ids': array\(\[[012]\]"),
            eval_only=JUNGAO_EVAL % ("02-Classifier_with_premade_estimator.py trains 1000 more "
                                     "steps (train(steps=), a constant)"),
            replica_check="no TPU switch"),
    Program("census_wide_deep_export", "AshutoshDongare/Tensorflow-Wide-Deep-Local-Prediction",
            "80c7bf9fd02264b6bfd7ae085b2e67e74dab3726",
            "AshutoshDongare+Tensorflow-Wide-Deep-Local-Prediction", "wide_deep.py",
            "census wide & deep tutorial (TF 1.5 official/wide_deep): "
            "DNNLinearCombinedClassifier over vocabulary-list, hash-bucket, bucketized, "
            "crossed, indicator and embedding columns, TextLineDataset + decode_csv, "
            "RunConfig().replace(session_config=), train/evaluate per epoch, "
            "export_savedmodel through build_parsing_serving_input_receiver_fn (to its "
            "constant /tmp/census_exported)",
            census_wide_deep("census_data", "census_model"), has_use_tpu=False,
            log_expects=EVALUATED_ONCE + (
                r"^\*+ Done Exporting at PAth - %s b'/tmp/census_exported/\d+'$",),
            eval_only=WIDE_DEEP_EVAL, replica_check="no TPU switch"),
    Program("census_wide_deep_predict", "brianchan1024/wide_deep",
            "756201e909c0bb9eaea0d60f1e288f577dc17d08", "brianchan1024+wide_deep",
            "wide_deep.py",
            "census wide & deep (official/wide_deep variant): DNNLinearCombinedClassifier with "
            "crossed columns of 1e4 and 1e6 buckets, embedding and indicator columns, "
            "export_savedmodel(as_text=True) of a parsing serving input, predict on an "
            "in-memory dict (class_ids, probabilities)",
            census_wide_deep("census_data", "census_model", exported="model"),
            has_use_tpu=False, log_expects=EVALUATED_ONCE + (r"^c:[01]$", r"^p:0\.\d+$"),
            eval_only=WIDE_DEEP_EVAL, replica_check="no TPU switch"),
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
