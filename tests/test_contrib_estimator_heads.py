"""`tf.contrib.estimator`'s heads in a model_fn of one's own
(`head.create_estimator_spec(features=, mode=, logits=, labels=, optimizer=)`) against
TF 1.15's: the scenarios of tests/contrib_head_scenarios.py give the original's trained
weights, eval metrics and predictions; the heads validate their arguments as TF1's did."""
import numpy as np
import pytest

import contrib_head_scenarios
import tpu_estimator_compat.v1 as tf

# Produced by tests/data/make_contrib_heads_reference.py under TF 2.15.1 + tensorflow-estimator
# 2.15 with TF 1.15's contrib head modules (graph mode), to 7 significant digits.
ORIGINAL = {'binary': {'metrics': {'accuracy': 0.6666667,
                        'accuracy/positive_threshold_0.3': 0.5416667,
                        'accuracy/positive_threshold_0.7': 0.6666667,
                        'accuracy_baseline': 0.6666666,
                        'auc': 0.8046874,
                        'auc_precision_recall': 0.7587526,
                        'average_loss': 0.5639293,
                        'global_step': 5.0,
                        'label/mean': 0.3333333,
                        'loss': 1.127859,
                        'precision': 0.5,
                        'precision/positive_threshold_0.3': 0.4117647,
                        'precision/positive_threshold_0.7': 0.0,
                        'prediction/mean': 0.4388285,
                        'recall': 0.5,
                        'recall/positive_threshold_0.3': 0.875,
                        'recall/positive_threshold_0.7': 0.0},
            'predictions': {'all_class_ids': [0, 1, 0, 1, 0, 1, 0, 1],
                            'all_classes': ['0', '1', '0', '1', '0', '1', '0', '1'],
                            'class_ids': [0, 0, 0, 1],
                            'classes': ['0', '0', '0', '1'],
                            'logistic': [0.4932095, 0.4858769, 0.437785, 0.5077513],
                            'logits': [-0.02716386, -0.05650738, -0.2501565, 0.03100782],
                            'probabilities': [0.5067906, 0.4932095, 0.5141231, 0.4858769, 0.562215,
                                              0.437785, 0.4922487, 0.5077513]},
            'weights': {'bias': [-0.008666936], 'kernel': [-0.1276006, 0.3657066, 0.5191711]}},
 'binary_vocabulary_named_sum': {'metrics': {'accuracy/yesno': 0.9166667,
                                             'accuracy_baseline/yesno': 0.5833334,
                                             'auc/yesno': 0.8857142,
                                             'auc_precision_recall/yesno': 0.9055554,
                                             'average_loss/yesno': 0.4320196,
                                             'global_step': 5.0,
                                             'label/mean/yesno': 0.4166667,
                                             'loss': 1.728078,
                                             'precision/yesno': 1.0,
                                             'prediction/mean/yesno': 0.4632986,
                                             'recall/yesno': 0.8},
                                 'predictions': {'all_class_ids': [0, 1, 0, 1, 0, 1, 0, 1],
                                                 'all_classes': ['no', 'yes', 'no', 'yes', 'no',
                                                                 'yes', 'no', 'yes'],
                                                 'class_ids': [1, 0, 0, 0],
                                                 'classes': ['yes', 'no', 'no', 'no'],
                                                 'logistic': [0.7056274, 0.3067668, 0.4093011,
                                                              0.3654353],
                                                 'logits': [0.8742409, -0.8152786, -0.3668552,
                                                            -0.5518501],
                                                 'probabilities': [0.2943726, 0.7056274, 0.6932333,
                                                                   0.3067668, 0.5906989, 0.4093012,
                                                                   0.6345647, 0.3654352]},
                                 'weights': {'bias': [0.04110149],
                                             'kernel': [0.3034006, 0.5852669, 0.3626386]}},
 'logistic': {'metrics': {'average_loss': 0.7168215,
                          'global_step': 5.0,
                          'label/mean': 0.4420407,
                          'loss': 1.433643,
                          'prediction/mean': 0.4710396},
              'predictions': {'logits': [-0.2213861, 0.3013037, -0.04853377, 0.321789],
                              'predictions': [0.4448784, 0.5747612, 0.4878689, 0.5797602]},
              'weights': {'bias': [0.07281218], 'kernel': [-0.2356128, 0.1937314, 0.4420813]}},
 'multi_class_loss_fn': {'metrics': {'accuracy': 0.75,
                                     'average_loss': 1.025301,
                                     'global_step': 5.0,
                                     'loss': 1.025301},
                         'predictions': {'all_class_ids': [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2],
                                         'all_classes': ['0', '1', '2', '0', '1', '2', '0', '1',
                                                         '2', '0', '1', '2'],
                                         'class_ids': [2, 0, 1, 1],
                                         'classes': ['2', '0', '1', '1'],
                                         'logits': [-1.126377, -0.4941342, 0.1668639, 1.169589,
                                                    0.875611, 0.1021252, 0.1800606, 0.2896827,
                                                    0.02404544, 0.7861573, 0.8482885, 0.3476246],
                                         'probabilities': [0.1532237, 0.2883404, 0.5584359,
                                                           0.4786584, 0.3567407, 0.1646008,
                                                           0.3365414, 0.3755319, 0.2879268,
                                                           0.3691284, 0.3927903, 0.2380812]},
                         'weights': {'bias': [0.04508604, 0.2296491, 0.1752648],
                                     'kernel': [-0.6328446, -0.4083772, -0.08377816, -0.1507923,
                                                -0.06824885, 0.2190412, 0.2723713, 0.3776579,
                                                0.4749708]}},
 'multi_class_vocabulary': {'metrics': {'accuracy': 0.625,
                                        'average_loss': 0.8257468,
                                        'global_step': 5.0,
                                        'loss': 1.651494},
                            'predictions': {'all_class_ids': [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2],
                                            'all_classes': ['low', 'mid', 'high', 'low', 'mid',
                                                            'high', 'low', 'mid', 'high', 'low',
                                                            'mid', 'high'],
                                            'class_ids': [2, 0, 1, 1],
                                            'classes': ['high', 'low', 'mid', 'mid'],
                                            'logits': [-1.262238, -0.4735464, 0.2821375, 1.246454,
                                                       0.9888147, -0.08794308, 0.1745222, 0.3655994,
                                                       -0.04633282, 0.823209, 0.9291572,
                                                       0.2297043],
                                            'probabilities': [0.126814, 0.2790563, 0.5941296,
                                                              0.4911131, 0.3795686, 0.1293184,
                                                              0.3319628, 0.4018585, 0.2661787,
                                                              0.3753539, 0.4173051, 0.207341]},
                            'weights': {'bias': [0.01618575, 0.2950715, 0.1387427],
                                        'kernel': [-0.685281, -0.4295505, -0.01016838, -0.1812086,
                                                   -0.08126321, 0.2624718, 0.2734626, 0.3643673,
                                                   0.48717]}},
 'multi_head': {'metrics': {'accuracy/cls': 0.75,
                            'average_loss/cls': 0.894222,
                            'average_loss/reg': 1.485218,
                            'global_step': 5.0,
                            'label/mean/reg': 1.583333,
                            'loss': 1.636831,
                            'loss/cls': 0.894222,
                            'loss/reg': 1.485218,
                            'prediction/mean/reg': 1.24799},
                'predictions': {'cls/all_class_ids': [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2],
                                'cls/all_classes': ['0', '1', '2', '0', '1', '2', '0', '1', '2',
                                                    '0', '1', '2'],
                                'cls/class_ids': [2, 0, 1, 1],
                                'cls/classes': ['2', '0', '1', '1'],
                                'cls/logits': [-1.098228, -0.6542603, -0.01005951, 1.130741,
                                               0.9688888, 0.2865762, 0.1724428, 0.2781399,
                                               0.0946373, 0.7356143, 0.8532704, 0.4203676],
                                'cls/probabilities': [0.1809067, 0.2820118, 0.5370815, 0.4385036,
                                                      0.3729766, 0.1885198, 0.3293124, 0.366026,
                                                      0.3046615, 0.3503282, 0.3940692, 0.2556026],
                                'reg/logits': [0.5549213, -0.007469416, 0.1785297, 0.3755851],
                                'reg/predictions': [1.741804, 0.9925584, 1.195458, 1.455843]},
                'weights': {'bias': [0.03590292, 0.1925288, 0.1715682, 0.3107291],
                            'kernel': [-0.6091864, -0.4679939, -0.1500925, 0.07367804, -0.1537303,
                                       -0.09905601, 0.1164227, 0.1750503, 0.234016, 0.347335,
                                       0.3731944, 0.3730507]}},
 'multi_label': {'metrics': {'accuracy/positive_threshold_0.5': 0.5,
                             'auc': 0.5732621,
                             'auc/class0': 0.05555569,
                             'auc/class2': 0.9999999,
                             'auc_precision_recall': 0.4413248,
                             'auc_precision_recall/class0': 0.1388719,
                             'auc_precision_recall/class2': 0.9999998,
                             'average_loss': 0.6781157,
                             'global_step': 5.0,
                             'loss': 1.356231,
                             'precision/positive_threshold_0.5': 0.2285714,
                             'probability_mean/class0': 0.4865144,
                             'probability_mean/class2': 0.4597749,
                             'recall/positive_threshold_0.5': 0.4705882},
                 'predictions': {'logits': [-0.5987968, -0.2792367, -0.2662828, 0.5883979,
                                            0.3909168, 0.3155623, 0.05259935, -0.002370894,
                                            0.02852312, 0.4646855, 0.3844623, 0.5997105],
                                 'probabilities': [0.354619, 0.4306409, 0.4338199, 0.6429974,
                                                   0.5965034, 0.5782424, 0.5131468, 0.4994073,
                                                   0.5071303, 0.6141251, 0.5949489, 0.64559]},
                 'weights': {'bias': [0.01903798, 0.08766323, 0.08271965],
                             'kernel': [-0.3538763, -0.2639877, -0.2451239, -0.02599477, 0.1494271,
                                        0.07898575, 0.2742614, 0.4150318, 0.5694971]}},
 'multi_label_vocabulary': {'metrics': {'auc/b/tags': 0.8124999,
                                        'auc/tags': 0.6846154,
                                        'auc_precision_recall/b/tags': 0.7464285,
                                        'auc_precision_recall/tags': 0.6034865,
                                        'average_loss/tags': 0.608246,
                                        'global_step': 5.0,
                                        'loss': 2.432984,
                                        'probability_mean/b/tags': 0.4696232},
                            'predictions': {'logits': [-0.2591484, -0.03775885, -0.4549462,
                                                       0.2275045, 0.09588405, 0.2761017,
                                                       -0.02345146, -0.1453197, -0.03561675,
                                                       0.2172848, 0.09427491, 0.6428221],
                                            'probabilities': [0.4355731, 0.4905614, 0.3881854,
                                                              0.556632, 0.5239527, 0.5685903,
                                                              0.4941374, 0.4637339, 0.4910967,
                                                              0.5541085, 0.5235513, 0.6553911]},
                            'weights': {'bias': [0.002718785, 0.05355756, -0.02069218],
                                        'kernel': [-0.170302, -0.1488326, -0.2806647, 0.04863417,
                                                   0.3073242, 0.01721705, 0.2229126, 0.4221849,
                                                   0.6242176]}},
 'poisson': {'metrics': {'average_loss': 1.351868,
                         'global_step': 5.0,
                         'label/mean': 1.583333,
                         'loss': 1.351868,
                         'prediction/mean': 1.305885},
             'predictions': {'logits': [0.7378721, -0.1474855, 0.2064669, 0.2703568],
                             'predictions': [2.09148, 0.8628749, 1.229327, 1.310432]},
             'weights': {'bias': [0.3232656], 'kernel': [0.1828813, 0.1444407, 0.2533748]}},
 'regression_2d_regularized': {'metrics': {'average_loss': 0.5541474,
                                           'global_step': 5.0,
                                           'label/mean': 0.04481027,
                                           'loss': 1.192742,
                                           'prediction/mean': 0.1485336,
                                           'regularization_loss': 0.08444675},
                               'predictions': {'predictions': [-0.6238234, 0.399657, 0.01599078,
                                                               0.4461228, 0.5308983, 0.2424021,
                                                               1.620083, -0.3473644]},
                               'weights': {'bias': [-0.1700114, 0.3448282],
                                           'kernel': [0.007098705, 0.009018585, -1.141968,
                                                      0.1961523, 0.3313177, -0.4862766]}}}


def _flat(rows, key):
    values = np.array([row[key] for row in rows]).ravel()
    return [v.decode() for v in values] if values.dtype.kind in "SO" else values


@pytest.mark.parametrize("scenario", sorted(contrib_head_scenarios.SCENARIOS))
def test_heads_give_the_originals_numbers(scenario, tmp_path):
    weights, metrics, predictions = contrib_head_scenarios.run(
        tf.contrib.estimator, tf.estimator, scenario, str(tmp_path))
    original = ORIGINAL[scenario]
    for name, value in original["weights"].items():
        np.testing.assert_allclose(weights[name].ravel(), value, rtol=1e-5, atol=1e-6)
    assert sorted(metrics) == sorted(original["metrics"])
    np.testing.assert_allclose([metrics[k] for k in sorted(metrics)],
                               [original["metrics"][k] for k in sorted(metrics)],
                               rtol=1e-5, atol=1e-6)
    keys = {"/".join(k) if isinstance(k, tuple) else k: k for k in predictions[0]}
    assert sorted(keys) == sorted(original["predictions"])
    for name, value in original["predictions"].items():
        got = _flat(predictions, keys[name])
        if isinstance(value[0], float):
            np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-6)
        else:
            assert list(got) == value


def _tpu_estimator_numbers_are_the_originals(model_dir, use_tpu):
    scenario = "multi_label"
    est = tf.contrib.tpu.TPUEstimator(
        model_fn=contrib_head_scenarios.model_fn(tf.contrib.estimator, scenario, tpu=True),
        use_tpu=use_tpu, train_batch_size=4, eval_batch_size=4, predict_batch_size=2,
        config=tf.contrib.tpu.RunConfig(model_dir=model_dir))
    labels = contrib_head_scenarios.SCENARIOS[scenario][1]
    est.train(contrib_head_scenarios.input_fn(labels),
              max_steps=contrib_head_scenarios.TRAIN_STEPS)
    metrics = est.evaluate(contrib_head_scenarios.input_fn(labels),
                           steps=contrib_head_scenarios.EVAL_STEPS)
    original = ORIGINAL[scenario]
    np.testing.assert_allclose(est.get_variable_value("kernel").ravel(),
                               original["weights"]["kernel"], rtol=1e-5, atol=1e-6)
    assert sorted(metrics) == sorted(original["metrics"])
    np.testing.assert_allclose([metrics[k] for k in sorted(metrics)],
                               [original["metrics"][k] for k in sorted(metrics)],
                               rtol=1e-5, atol=1e-6)


def test_the_tpu_spec_gives_the_same_numbers_on_tpu_estimator(tmp_path):
    # TF1's heads (multi_head excepted) also built TPUEstimatorSpecs: metrics as a
    # (metric_fn, tensors) pair. TPUEstimator on CPU: the original's Estimator numbers.
    _tpu_estimator_numbers_are_the_originals(str(tmp_path), use_tpu=False)


@pytest.mark.slow  # compiles the steps with XLA
def test_the_tpu_spec_gives_the_same_numbers_on_the_simulated_tpu(tmp_path, monkeypatch):
    from tpu_estimator_compat.engine import cluster_resolver  # noqa: PLC0415
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "1")
    _tpu_estimator_numbers_are_the_originals(str(tmp_path), use_tpu=True)


def test_multi_head_merges_the_heads_export_outputs_as_the_original():
    contrib = tf.contrib.estimator
    head = contrib.multi_head([contrib.multi_class_head(3, name="cls"),
                               contrib.regression_head(name="reg")])
    assert (head.name, head.logits_dimension) == ("cls_reg", 4)
    with tf.Graph().as_default():
        spec = head.create_estimator_spec(features={}, mode=tf.estimator.ModeKeys.PREDICT,
                                          logits=tf.zeros([2, 4]))
        # The original's keys (TF 1.15's multi_head, the same heads).
        assert sorted(spec.export_outputs) == [
            "cls", "cls/classification", "cls/predict", "predict", "reg", "reg/predict",
            "reg/regression", "serving_default"]
        assert spec.export_outputs["serving_default"] is spec.export_outputs["cls"]
        assert sorted(spec.export_outputs["predict"].outputs) == [
            "cls/all_class_ids", "cls/all_classes", "cls/class_ids", "cls/classes",
            "cls/logits", "cls/probabilities", "reg/predictions"]
        assert sorted(spec.predictions) == [
            ("cls", "all_class_ids"), ("cls", "all_classes"), ("cls", "class_ids"),
            ("cls", "classes"), ("cls", "logits"), ("cls", "probabilities"),
            ("reg", "predictions")]
        with pytest.raises(ValueError, match=r"Could not split logits of shape \[2, 5\] among "
                                             r"the heads with individual logits dimensions: "
                                             r"\[3, 1\]\. The last dimension of the logits "
                                             r"tensor should equal 4 but is 5\."):
            head.create_estimator_spec(features={}, mode=tf.estimator.ModeKeys.PREDICT,
                                       logits=tf.zeros([2, 5]))
        with pytest.raises(ValueError, match=r"labels must be a dict\. Given: Tensor"):
            head.create_estimator_spec(features={}, mode=tf.estimator.ModeKeys.TRAIN,
                                       logits=tf.zeros([2, 4]), labels=tf.zeros([2, 1]))
        with pytest.raises(NotImplementedError,
                           match="TPUEstimatorSpec not available for this model head"):
            head._create_tpu_estimator_spec(  # pylint: disable=protected-access
                features={}, mode=tf.estimator.ModeKeys.PREDICT, logits=tf.zeros([2, 4]))


_HEADS = tf.contrib.estimator


@pytest.mark.parametrize("make, error, message", [  # the original's errors
    (lambda: _HEADS.multi_label_head(1), ValueError,
     "n_classes must be > 1 for multi-class classification. Given: 1"),
    (lambda: _HEADS.multi_label_head(3, thresholds=[0.2, 1.0]), ValueError,
     "thresholds must be in (0, 1) range. Given: 1.0"),
    (lambda: _HEADS.multi_label_head(3, label_vocabulary=["a", "b"]), ValueError,
     "Length of label_vocabulary must be n_classes (3). Given: 2"),
    (lambda: _HEADS.multi_label_head(3, label_vocabulary="abc"), ValueError,
     "label_vocabulary must be a list or tuple. Given type: <class 'str'>"),
    (lambda: _HEADS.multi_label_head(3, classes_for_class_based_metrics=["a"]), ValueError,
     "label_vocabulary must be provided when classes_for_class_based_metrics are sting."),
    (lambda: _HEADS.multi_label_head(3, classes_for_class_based_metrics=[3]), ValueError,
     "All classes_for_class_based_metrics must be in range [0, 2]. Given: 3"),
    (lambda: _HEADS.binary_classification_head(thresholds=[0.5, 0.0]), ValueError,
     "thresholds not in (0, 1): ((0.5, 0.0),)."),
    (lambda: _HEADS.binary_classification_head(label_vocabulary="ab"), TypeError,
     "label_vocabulary should be a list or tuple. Given type: <class 'str'>"),
    (lambda: _HEADS.multi_class_head(3, label_vocabulary="abc"), ValueError,
     "label_vocabulary should be a list or a tuple. Given type: <class 'str'>"),
    (lambda: _HEADS.multi_class_head(2), ValueError, "n_classes must be > 2: 2."),
    (lambda: _HEADS.regression_head(loss_reduction="none"), ValueError,
     "Invalid loss_reduction: none"),
    (lambda: _HEADS.regression_head(loss_fn=lambda labels, preds: labels), ValueError,
     "loss_fn must contain argument: logits. Given arguments: ('labels', 'preds')"),
    (lambda: _HEADS.regression_head(loss_fn=lambda labels, logits, mode: labels), ValueError,
     "loss_fn has unexpected args: ['mode']"),
    (lambda: _HEADS.regression_head(label_dimension=0), ValueError,
     "Invalid label_dimension 0."),
    (lambda: _HEADS.multi_head([]), ValueError, "Must specify heads. Given: []"),
    (lambda: _HEADS.multi_head([_HEADS.regression_head(name="a")], head_weights=[1., 2.]),
     ValueError, "heads and head_weights must have the same size. Given len(heads): 1. "
                 "Given len(head_weights): 2."),
])
def test_heads_validate_their_arguments_as_the_original(make, error, message):
    with pytest.raises(error) as raised:
        make()
    assert str(raised.value) == message


def test_a_head_without_a_name_cannot_join_a_multi_head():
    with pytest.raises(ValueError, match="All given heads must have name specified. Given: "):
        tf.contrib.estimator.multi_head([tf.contrib.estimator.regression_head()])


def test_tf1_module_paths_serve_the_heads_and_logit_functions():
    # pylint: disable=import-outside-toplevel
    from tpu_estimator_compat.v1.contrib.estimator.python.estimator import head
    from tpu_estimator_compat.v1.contrib.estimator.python.estimator import logit_fns
    from tpu_estimator_compat.v1.contrib.estimator.python.estimator import multi_head
    assert head.multi_label_head is tf.contrib.estimator.multi_label_head
    assert multi_head.multi_head is tf.contrib.estimator.multi_head
    for name in ("call_logit_fn", "dnn_logit_fn_builder", "linear_logit_fn_builder"):
        assert getattr(tf.contrib.estimator, name) is getattr(tf.estimator.experimental, name)
        assert getattr(logit_fns, name) is getattr(tf.estimator.experimental, name)


def test_create_loss_gives_the_originals_losses_and_labels():
    # SparseTensor labels (class ids, vocabulary strings), per-logit weights, a loss_fn
    # taking the features, multi_head's weighted merge; the original's values.
    contrib, v1 = tf.contrib.estimator, tf.compat.v1
    with tf.Graph().as_default():
        logits = tf.constant([[0.1, -0.3, 0.7], [1.2, 0.4, -0.5]])
        features = {"w": tf.constant([[2.0], [0.5]])}
        ids = tf.SparseTensor([[0, 0], [0, 1], [1, 2]], tf.constant([0, 2, 1], tf.int64), [2, 2])
        names = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant(["c", "a", "b"]), [2, 2])
        specs = {
            "ids": contrib.multi_label_head(3, weight_column="w").create_loss(
                features, "train", logits, ids),
            "names": contrib.multi_label_head(
                3, label_vocabulary=["a", "b", "c"],
                loss_reduction=v1.losses.Reduction.SUM).create_loss(
                    features, "train", logits, names),
            "per_logit_weights": contrib.regression_head(
                label_dimension=2, weight_column="w2").create_loss(
                    {"w2": tf.constant([[1.0, 2.0], [3.0, 0.5]])}, "train",
                    tf.constant([[0.1, -0.3], [1.2, 0.4]]), tf.constant([[0.0, 1.0], [1.0, 1.0]])),
            "loss_fn": contrib.binary_classification_head(
                loss_fn=lambda labels, logits, features: tf.abs(
                    labels - tf.sigmoid(logits)) * features["w"]).create_loss(
                        features, "train", tf.constant([[0.3], [-0.2]]),
                        tf.constant([[1.0], [0.0]])),
            "multi_head": contrib.multi_head(
                [contrib.multi_class_head(3, name="a"), contrib.regression_head(name="b")],
                head_weights=[2.0, 0.5]).create_loss(
                    features, "train", tf.constant([[0.1, -0.3, 0.7, 2.0],
                                                    [1.2, 0.4, -0.5, 1.0]]),
                    {"a": tf.constant([[2], [0]]), "b": tf.constant([[1.5], [0.5]])}),
        }
        with v1.Session() as session:
            session.run(v1.tables_initializer())
            values = session.run({name: (spec.training_loss, spec.unreduced_loss,
                                         spec.processed_labels)
                                  for name, spec in specs.items()})
    expected = {  # training loss, unreduced loss, processed labels
        "ids": (0.738177, [[0.533979], [0.816792]], [[1, 0, 1], [0, 1, 0]]),
        "names": (0.984104, [[0.567313], [0.416792]], [[0, 0, 1], [1, 1, 0]]),
        "per_logit_weights": (0.9225, [[0.01, 1.69], [0.04, 0.36]], [[0., 1.], [1., 1.]]),
        "loss_fn": (0.538099, [[0.851115], [0.225083]], [[1.0], [0.0]]),
    }
    for name, (loss, unreduced, labels) in expected.items():
        np.testing.assert_allclose(values[name][0], loss, rtol=1e-5)
        np.testing.assert_allclose(values[name][1], unreduced, rtol=1e-5)
        np.testing.assert_array_equal(values[name][2], labels)
    loss, unreduced, labels = values["multi_head"]
    np.testing.assert_allclose(loss, 1.265414, rtol=1e-5)
    np.testing.assert_allclose(unreduced["a"], [[1.301201], [0.979628]], rtol=1e-5)
    np.testing.assert_allclose(unreduced["b"], [[0.125], [0.125]], rtol=1e-5)
    assert labels["a"].tolist() == [[2], [0]] and labels["b"].tolist() == [[1.5], [0.5]]
