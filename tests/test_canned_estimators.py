"""The canned estimators (`tf.estimator.DNNClassifier`, `DNNRegressor`, `LinearClassifier`,
`LinearRegressor`...) against TF 1.15's: same seed and data give the original's variables,
checkpoint names and eval metrics; a checkpoint the original wrote restores here and
predicts what the original predicted; the `*Estimator` classes on `tf.contrib.estimator`'s
heads give the original's numbers and predictions; BestExporter exports when the metric
improves."""
import importlib
import inspect
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import canned_scenarios
import tpu_estimator_compat.v1 as tf1

# Produced by tests/data/make_canned_reference.py under TF 2.15.1 + tensorflow-estimator 2.15
# (`tf.compat.v1.estimator`, graph mode): the checkpoint's tensor names, and the trained
# variables, eval metrics (and the DNNClassifier's predicted `logistic`) of each scenario of
# tests/canned_scenarios.py, to 8 significant digits.
CHECKPOINT_NAMES = {'baseline_multi_class': ['baseline/bias', 'baseline/bias/Ftrl', 'baseline/bias/Ftrl_1',
                          'global_step'],
 'baseline_regressor': ['baseline/bias', 'baseline/bias/Ftrl', 'baseline/bias/Ftrl_1',
                        'global_step'],
 'census_style_wide_deep': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/Adagrad',
                            'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/Adagrad',
                            'dnn/hiddenlayer_1/bias', 'dnn/hiddenlayer_1/bias/Adagrad',
                            'dnn/hiddenlayer_1/kernel', 'dnn/hiddenlayer_1/kernel/Adagrad',
                            'dnn/input_from_feature_columns/input_layer/city_embedding/embedding_weights',
                            'dnn/input_from_feature_columns/input_layer/city_embedding/embedding_weights/Adagrad',
                            'dnn/logits/bias', 'dnn/logits/bias/Adagrad', 'dnn/logits/kernel',
                            'dnn/logits/kernel/Adagrad', 'global_step',
                            'linear/linear_model/bias_weights',
                            'linear/linear_model/bias_weights/Ftrl',
                            'linear/linear_model/bias_weights/Ftrl_1',
                            'linear/linear_model/city_X_color/weights',
                            'linear/linear_model/city_X_color/weights/Ftrl',
                            'linear/linear_model/city_X_color/weights/Ftrl_1',
                            'linear/linear_model/x_bucketized/weights',
                            'linear/linear_model/x_bucketized/weights/Ftrl',
                            'linear/linear_model/x_bucketized/weights/Ftrl_1'],
 'dnn_batch_norm': ['dnn/head/beta1_power', 'dnn/head/beta2_power',
                    'dnn/hiddenlayer_0/batchnorm_0/beta',
                    'dnn/hiddenlayer_0/batchnorm_0/beta/t_0/Adam',
                    'dnn/hiddenlayer_0/batchnorm_0/beta/t_0/Adam_1',
                    'dnn/hiddenlayer_0/batchnorm_0/gamma',
                    'dnn/hiddenlayer_0/batchnorm_0/gamma/t_0/Adam',
                    'dnn/hiddenlayer_0/batchnorm_0/gamma/t_0/Adam_1',
                    'dnn/hiddenlayer_0/batchnorm_0/moving_mean',
                    'dnn/hiddenlayer_0/batchnorm_0/moving_variance', 'dnn/hiddenlayer_0/bias',
                    'dnn/hiddenlayer_0/bias/t_0/Adam', 'dnn/hiddenlayer_0/bias/t_0/Adam_1',
                    'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adam',
                    'dnn/hiddenlayer_0/kernel/t_0/Adam_1', 'dnn/hiddenlayer_1/batchnorm_1/beta',
                    'dnn/hiddenlayer_1/batchnorm_1/beta/t_0/Adam',
                    'dnn/hiddenlayer_1/batchnorm_1/beta/t_0/Adam_1',
                    'dnn/hiddenlayer_1/batchnorm_1/gamma',
                    'dnn/hiddenlayer_1/batchnorm_1/gamma/t_0/Adam',
                    'dnn/hiddenlayer_1/batchnorm_1/gamma/t_0/Adam_1',
                    'dnn/hiddenlayer_1/batchnorm_1/moving_mean',
                    'dnn/hiddenlayer_1/batchnorm_1/moving_variance', 'dnn/hiddenlayer_1/bias',
                    'dnn/hiddenlayer_1/bias/t_0/Adam', 'dnn/hiddenlayer_1/bias/t_0/Adam_1',
                    'dnn/hiddenlayer_1/kernel', 'dnn/hiddenlayer_1/kernel/t_0/Adam',
                    'dnn/hiddenlayer_1/kernel/t_0/Adam_1', 'dnn/logits/bias',
                    'dnn/logits/bias/t_0/Adam', 'dnn/logits/bias/t_0/Adam_1', 'dnn/logits/kernel',
                    'dnn/logits/kernel/t_0/Adam', 'dnn/logits/kernel/t_0/Adam_1', 'global_step'],
 'dnn_binary': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                'dnn/hiddenlayer_1/bias', 'dnn/hiddenlayer_1/bias/t_0/Adagrad',
                'dnn/hiddenlayer_1/kernel', 'dnn/hiddenlayer_1/kernel/t_0/Adagrad',
                'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights',
                'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights/t_0/Adagrad',
                'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad', 'dnn/logits/kernel',
                'dnn/logits/kernel/t_0/Adagrad', 'global_step'],
 'dnn_binary_mirrored': ['dnn/dnn/hiddenlayer_0/bias/Adagrad',
                         'dnn/dnn/hiddenlayer_0/kernel/Adagrad',
                         'dnn/dnn/hiddenlayer_1/bias/Adagrad',
                         'dnn/dnn/hiddenlayer_1/kernel/Adagrad',
                         'dnn/dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights/Adagrad',
                         'dnn/dnn/logits/bias/Adagrad', 'dnn/dnn/logits/kernel/Adagrad',
                         'dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/kernel',
                         'dnn/hiddenlayer_1/bias', 'dnn/hiddenlayer_1/kernel',
                         'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights',
                         'dnn/logits/bias', 'dnn/logits/kernel', 'global_step'],
 'dnn_binary_vocabulary': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                           'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                           'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad', 'dnn/logits/kernel',
                           'dnn/logits/kernel/t_0/Adagrad', 'global_step'],
 'dnn_dropout': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                 'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                 'dnn/hiddenlayer_1/bias', 'dnn/hiddenlayer_1/bias/t_0/Adagrad',
                 'dnn/hiddenlayer_1/kernel', 'dnn/hiddenlayer_1/kernel/t_0/Adagrad',
                 'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad', 'dnn/logits/kernel',
                 'dnn/logits/kernel/t_0/Adagrad', 'global_step'],
 'dnn_multi_class': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                     'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                     'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad', 'dnn/logits/kernel',
                     'dnn/logits/kernel/t_0/Adagrad', 'global_step'],
 'dnn_regressor': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                   'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                   'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad', 'dnn/logits/kernel',
                   'dnn/logits/kernel/t_0/Adagrad', 'global_step'],
 'linear_binary': ['global_step', 'linear/linear_model/bias_weights',
                   'linear/linear_model/bias_weights/part_0/Ftrl',
                   'linear/linear_model/bias_weights/part_0/Ftrl_1',
                   'linear/linear_model/color/weights',
                   'linear/linear_model/color/weights/part_0/Ftrl',
                   'linear/linear_model/color/weights/part_0/Ftrl_1',
                   'linear/linear_model/x/weights', 'linear/linear_model/x/weights/part_0/Ftrl',
                   'linear/linear_model/x/weights/part_0/Ftrl_1'],
 'linear_regressor': ['global_step', 'linear/linear_model/bias_weights',
                      'linear/linear_model/bias_weights/part_0/Ftrl',
                      'linear/linear_model/bias_weights/part_0/Ftrl_1',
                      'linear/linear_model/color/weights',
                      'linear/linear_model/color/weights/part_0/Ftrl',
                      'linear/linear_model/color/weights/part_0/Ftrl_1',
                      'linear/linear_model/x/weights', 'linear/linear_model/x/weights/part_0/Ftrl',
                      'linear/linear_model/x/weights/part_0/Ftrl_1'],
 'linear_vocabulary': ['global_step', 'linear/linear_model/bias_weights',
                       'linear/linear_model/bias_weights/part_0/Adagrad',
                       'linear/linear_model/color/weights',
                       'linear/linear_model/color/weights/part_0/Adagrad',
                       'linear/linear_model/x/weights',
                       'linear/linear_model/x/weights/part_0/Adagrad'],
 'logit_fns': ['deep/hiddenlayer_0/bias', 'deep/hiddenlayer_0/kernel', 'deep/logits/bias',
               'deep/logits/kernel', 'global_step', 'wide/linear_model/bias_weights',
               'wide/linear_model/x/weights'],
 'wide_deep_binary': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/Adagrad',
                      'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/Adagrad',
                      'dnn/logits/bias', 'dnn/logits/bias/Adagrad', 'dnn/logits/kernel',
                      'dnn/logits/kernel/Adagrad', 'global_step',
                      'linear/linear_model/bias_weights', 'linear/linear_model/bias_weights/Ftrl',
                      'linear/linear_model/bias_weights/Ftrl_1',
                      'linear/linear_model/color/weights', 'linear/linear_model/color/weights/Ftrl',
                      'linear/linear_model/color/weights/Ftrl_1'],
 'wide_deep_regressor': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/Adagrad',
                         'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/Adagrad',
                         'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights',
                         'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights/Adagrad',
                         'dnn/logits/bias', 'dnn/logits/bias/Adagrad', 'dnn/logits/kernel',
                         'dnn/logits/kernel/Adagrad', 'global_step',
                         'linear/linear_model/bias_weights',
                         'linear/linear_model/bias_weights/Ftrl',
                         'linear/linear_model/bias_weights/Ftrl_1',
                         'linear/linear_model/color/weights',
                         'linear/linear_model/color/weights/Ftrl',
                         'linear/linear_model/color/weights/Ftrl_1',
                         'linear/linear_model/x/weights', 'linear/linear_model/x/weights/Ftrl',
                         'linear/linear_model/x/weights/Ftrl_1']}
ORIGINAL = {'baseline_multi_class': {'metrics': {'accuracy': 0.41666666,
                                      'average_loss': 0.95206922,
                                      'global_step': 6.0,
                                      'loss': 3.8082769},
                          'weights': {'baseline/bias': [-0.62547445, 0.2914741, 0.28791839]}},
 'baseline_regressor': {'metrics': {'average_loss': 5.7400475,
                                    'global_step': 6.0,
                                    'label/mean': 0.31566051,
                                    'loss': 45.92038,
                                    'prediction/mean': 0.27125248},
                        'weights': {'baseline/bias': [0.27125248]}},
 'census_style_wide_deep': {'metrics': {'accuracy': 0.25,
                                        'accuracy_baseline': 0.83333331,
                                        'auc': 0.5249998,
                                        'auc_precision_recall': 0.88517123,
                                        'average_loss': 0.76424736,
                                        'global_step': 6.0,
                                        'label/mean': 0.83333331,
                                        'loss': 3.0569894,
                                        'precision': 1.0,
                                        'prediction/mean': 0.45479894,
                                        'recall': 0.1},
                            'weights': {'dnn/hiddenlayer_0/bias': [-0.0021132678, -0.0016443861,
                                                                   -0.002599634, 0.0019143092],
                                        'dnn/hiddenlayer_0/kernel': [-0.053508453, 0.58217472,
                                                                     -0.20976748, -0.20277072,
                                                                     -0.24154425, -0.51915884,
                                                                     -0.45177755, 0.21352878,
                                                                     -0.27912688, 0.42487913,
                                                                     0.19084926, -0.32733944,
                                                                     0.21798955, 0.01872283,
                                                                     0.12633216, 0.52053332,
                                                                     0.50917464, -0.094633728,
                                                                     -0.23275787, 0.42403114,
                                                                     -0.33294213, -0.16894032,
                                                                     -0.40085104, 0.466887,
                                                                     0.46396774, -0.047229283,
                                                                     -0.076600738, 0.15885703,
                                                                     0.49686548, 0.4700307,
                                                                     0.51518887, 0.13301612,
                                                                     -0.0044841683, -0.53076363,
                                                                     0.51851392, 0.28476107],
                                        'dnn/hiddenlayer_1/bias': [-0.0001941627, -0.0028397946],
                                        'dnn/hiddenlayer_1/kernel': [-0.44010311, 0.37083063,
                                                                     0.30597982, 0.86652619,
                                                                     -0.79684043, 0.72478855,
                                                                     0.35073408, -0.31161639],
                                        'dnn/input_from_feature_columns/input_layer/city_embedding/embedding_weights': [0.20428959,
                                                                                                                        0.38279676,
                                                                                                                        -0.56437409,
                                                                                                                        0.44833755,
                                                                                                                        -0.33989415,
                                                                                                                        0.48827022,
                                                                                                                        0.00077218772,
                                                                                                                        -0.33183035,
                                                                                                                        -0.72130913,
                                                                                                                        -0.3116762,
                                                                                                                        0.016590755,
                                                                                                                        -0.13513769,
                                                                                                                        -0.025079699,
                                                                                                                        -0.39401981,
                                                                                                                        0.5798803,
                                                                                                                        0.26921844,
                                                                                                                        -0.80148488,
                                                                                                                        0.7125122,
                                                                                                                        0.0084238127,
                                                                                                                        -0.14208321,
                                                                                                                        0.0149269],
                                        'dnn/logits/bias': [0.0030982741],
                                        'dnn/logits/kernel': [-0.27907386, -0.34523067],
                                        'linear/linear_model/bias_weights': [0.015491372],
                                        'linear/linear_model/city_X_color/weights': [0.012622681,
                                                                                     0.012556767,
                                                                                     0.0, 0.0, 0.0,
                                                                                     0.012897193,
                                                                                     0.0022959479,
                                                                                     0.0,
                                                                                     0.010899287,
                                                                                     0.0, 0.0],
                                        'linear/linear_model/x_bucketized/weights': [-0.0073754233,
                                                                                     0.0077149794,
                                                                                     0.01622179,
                                                                                     0.011400124,
                                                                                     0.0074728476,
                                                                                     -0.0028165693,
                                                                                     0.016018465,
                                                                                     0.016937204,
                                                                                     -0.0072095748,
                                                                                     0.016007319,
                                                                                     0.012841284,
                                                                                     0.012897193]}},
 'dnn_batch_norm': {'metrics': {'average_loss': 4.0710559,
                                'global_step': 6.0,
                                'label/mean': 0.23610882,
                                'loss': 16.284224,
                                'prediction/mean': 0.45034206},
                    'weights': {'dnn/head/beta1_power': [0.47829682],
                                'dnn/head/beta2_power': [0.99302107],
                                'dnn/hiddenlayer_0/batchnorm_0/beta': [0.11851171, -0.27518171,
                                                                       0.0081747565, 0.25487831],
                                'dnn/hiddenlayer_0/batchnorm_0/beta/t_0/Adam': [0.040977001,
                                                                                0.35972255,
                                                                                0.2489419,
                                                                                -0.3277984],
                                'dnn/hiddenlayer_0/batchnorm_0/beta/t_0/Adam_1': [0.025327673,
                                                                                  0.0065527442,
                                                                                  0.0089108394,
                                                                                  0.004039648],
                                'dnn/hiddenlayer_0/batchnorm_0/gamma': [0.96060359, 1.0772855,
                                                                        0.93997693, 1.0437434],
                                'dnn/hiddenlayer_0/batchnorm_0/gamma/t_0/Adam': [0.13535878,
                                                                                 0.090194017,
                                                                                 -0.90742683,
                                                                                 0.30477661],
                                'dnn/hiddenlayer_0/batchnorm_0/gamma/t_0/Adam_1': [0.11053439,
                                                                                   0.15274605,
                                                                                   0.25358251,
                                                                                   0.1858719],
                                'dnn/hiddenlayer_0/batchnorm_0/moving_mean': [0.0014017773,
                                                                              -0.0025310535,
                                                                              0.0011258648,
                                                                              0.0018500917],
                                'dnn/hiddenlayer_0/batchnorm_0/moving_variance': [0.99620795,
                                                                                  0.99577266,
                                                                                  0.99601126,
                                                                                  0.99513382],
                                'dnn/hiddenlayer_0/bias': [0.17837593, 0.13984834, 0.10478534,
                                                           0.061027154],
                                'dnn/hiddenlayer_0/bias/t_0/Adam': [-0.10470546, -0.39734238,
                                                                    -0.015887052, -0.75940108],
                                'dnn/hiddenlayer_0/bias/t_0/Adam_1': [0.0041669281, 0.017922293,
                                                                      0.024028353, 0.056709465],
                                'dnn/hiddenlayer_0/kernel': [0.65644616, -1.0359761, -0.29685518,
                                                             0.78622746, -0.31465951, -0.33530766,
                                                             0.88528824, 0.12944953, -0.57567185,
                                                             -0.20101497, 0.079753488, 0.30589858],
                                'dnn/hiddenlayer_0/kernel/t_0/Adam': [-0.15718102, 0.93621343,
                                                                      0.59565532, 0.026421666,
                                                                      0.49309304, -1.8745955,
                                                                      0.03426186, -3.6067951,
                                                                      -0.25745475, -0.6350655,
                                                                      0.028473184, -1.470221],
                                'dnn/hiddenlayer_0/kernel/t_0/Adam_1': [0.0091735879, 0.044191271,
                                                                        0.068559103, 0.0059782183,
                                                                        0.075939864, 0.16324995,
                                                                        0.0013456029, 0.52553016,
                                                                        0.032922525, 0.092881233,
                                                                        0.023754425, 0.088788122],
                                'dnn/hiddenlayer_1/batchnorm_1/beta': [-0.11108997, 0.11152444,
                                                                       0.098742418],
                                'dnn/hiddenlayer_1/batchnorm_1/beta/t_0/Adam': [0.15712193,
                                                                                -0.13858248,
                                                                                -0.1077545],
                                'dnn/hiddenlayer_1/batchnorm_1/beta/t_0/Adam_1': [0.018982263,
                                                                                  0.016594296,
                                                                                  0.013514856],
                                'dnn/hiddenlayer_1/batchnorm_1/gamma': [0.75298578, 0.99134684,
                                                                        0.99749804],
                                'dnn/hiddenlayer_1/batchnorm_1/gamma/t_0/Adam': [1.439374,
                                                                                 -0.84354329,
                                                                                 -0.45813265],
                                'dnn/hiddenlayer_1/batchnorm_1/gamma/t_0/Adam_1': [0.14489456,
                                                                                   0.083361156,
                                                                                   0.081279248],
                                'dnn/hiddenlayer_1/batchnorm_1/moving_mean': [0.00044547342,
                                                                              0.00086202438,
                                                                              0.00046933175],
                                'dnn/hiddenlayer_1/batchnorm_1/moving_variance': [0.99643737,
                                                                                  0.99660712,
                                                                                  0.99492884],
                                'dnn/hiddenlayer_1/bias': [0.19168155, 0.14908016, 0.23557182],
                                'dnn/hiddenlayer_1/bias/t_0/Adam': [-0.55666053, -0.068105698,
                                                                    -0.12412167],
                                'dnn/hiddenlayer_1/bias/t_0/Adam_1': [0.01463425, 0.031485714,
                                                                      0.0043125916],
                                'dnn/hiddenlayer_1/kernel': [-0.035104044, 1.0234001, -0.27823651,
                                                             -0.53029037, -0.21107958, -0.66560614,
                                                             -0.36155659, 0.047802735, -0.62530518,
                                                             0.80333024, 0.42994782, -0.35774907],
                                'dnn/hiddenlayer_1/kernel/t_0/Adam': [0.21368074, -0.89250302,
                                                                      -2.6781409, 1.7421839,
                                                                      -1.2415545, -0.37730497,
                                                                      -1.9781612, 1.8120555,
                                                                      4.3347192, -0.96763331,
                                                                      -0.079157159, -1.8243248],
                                'dnn/hiddenlayer_1/kernel/t_0/Adam_1': [0.078699008, 0.043205149,
                                                                        0.73978359, 0.18250202,
                                                                        0.087092631, 0.37461716,
                                                                        0.21921751, 0.15691139,
                                                                        1.0247844, 0.074646734,
                                                                        0.048025202, 0.97917503],
                                'dnn/logits/bias': [0.10729819],
                                'dnn/logits/bias/t_0/Adam': [-0.31248546],
                                'dnn/logits/bias/t_0/Adam_1': [0.092234932],
                                'dnn/logits/kernel': [-0.29353294, 0.45276317, 0.3765766],
                                'dnn/logits/kernel/t_0/Adam': [-2.9480205, -1.9918432, -1.3255081],
                                'dnn/logits/kernel/t_0/Adam_1': [0.59656119, 0.4530105,
                                                                 0.57667124]}},
 'dnn_binary': {'logistic': [0.52243161, 0.52737349, 0.53719634, 0.51421064, 0.53719634, 0.50567263,
                             0.50985062, 0.53719634, 0.5367372, 0.43882707, 0.53719634,
                             0.47018313],
                'metrics': {'accuracy': 0.83333331,
                            'accuracy_baseline': 0.83333331,
                            'auc': 0.84999967,
                            'auc_precision_recall': 0.97202009,
                            'average_loss': 0.65965235,
                            'global_step': 6.0,
                            'label/mean': 0.83333331,
                            'loss': 2.6386094,
                            'precision': 0.89999998,
                            'prediction/mean': 0.51450604,
                            'recall': 0.89999998},
                'weights': {'dnn/hiddenlayer_0/bias': [-0.035868876, -0.056757696, -0.022589637,
                                                       -0.096760087],
                            'dnn/hiddenlayer_0/kernel': [-0.076368466, 0.73628372, -0.25182915,
                                                         -0.24311653, -0.30866337, -0.66966665,
                                                         -0.55463701, 0.17667796, -0.35004359,
                                                         0.40593025, 0.1961842, -0.489369,
                                                         0.23969738, -0.016623957, 0.17545502,
                                                         0.48627597, 0.56193262, -0.21677162,
                                                         -0.22123179, 0.42145285],
                            'dnn/hiddenlayer_1/bias': [-0.092639245, -0.064669549, -0.11533928],
                            'dnn/hiddenlayer_1/kernel': [-0.44418156, 0.29140076, 0.20550369,
                                                         0.77433664, -0.73773086, 0.63940537,
                                                         0.29354367, -0.28586543, -0.48085451,
                                                         0.5573895, -0.2102915, 0.7129885],
                            'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights': [0.28167513,
                                                                                                             0.46239176,
                                                                                                             -0.68952382,
                                                                                                             0.56159443,
                                                                                                             -0.44926086,
                                                                                                             0.61586195],
                            'dnn/logits/bias': [0.14906074],
                            'dnn/logits/kernel': [-0.14886101, -0.28018245, -0.33756346]}},
 'dnn_binary_mirrored': {'metrics': {'accuracy': 0.83333331,
                                     'accuracy_baseline': 0.83333331,
                                     'auc': 0.89999962,
                                     'auc_precision_recall': 0.98257565,
                                     'average_loss': 0.64762574,
                                     'global_step': 6.0,
                                     'label/mean': 0.83333331,
                                     'loss': 2.590503,
                                     'precision': 0.89999998,
                                     'prediction/mean': 0.52096367,
                                     'recall': 0.89999998},
                         'weights': {'dnn/hiddenlayer_0/bias': [-0.050436638, -0.073552325,
                                                                -0.036268476, -0.095495649],
                                     'dnn/hiddenlayer_0/kernel': [-0.078968473, 0.75008988,
                                                                  -0.25629124, -0.23441003,
                                                                  -0.3171238, -0.68022329,
                                                                  -0.55957282, 0.17160769,
                                                                  -0.35592508, 0.3836928,
                                                                  0.17960992, -0.49946976,
                                                                  0.23375773, -0.051270079,
                                                                  0.20377053, 0.48179734, 0.5490424,
                                                                  -0.23727602, -0.18330429,
                                                                  0.38176334],
                                     'dnn/hiddenlayer_1/bias': [-0.10118978, -0.073185079,
                                                                -0.12479012],
                                     'dnn/hiddenlayer_1/kernel': [-0.46795097, 0.28640535,
                                                                  0.17073339, 0.77175093,
                                                                  -0.73773086, 0.64071339,
                                                                  0.2683647, -0.28586543,
                                                                  -0.48414651, 0.53281945,
                                                                  -0.21415879, 0.69828087],
                                     'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights': [0.30702493,
                                                                                                                      0.45479825,
                                                                                                                      -0.69050688,
                                                                                                                      0.57310498,
                                                                                                                      -0.45249799,
                                                                                                                      0.60447866],
                                     'dnn/logits/bias': [0.16476333],
                                     'dnn/logits/kernel': [-0.1495555, -0.27728239, -0.33989188]}},
 'dnn_binary_vocabulary': {'metrics': {'accuracy': 0.75,
                                       'accuracy_baseline': 0.83333331,
                                       'auc': 0.3499999,
                                       'auc_precision_recall': 0.65362382,
                                       'average_loss': 0.75809979,
                                       'global_step': 6.0,
                                       'label/mean': 0.83333331,
                                       'loss': 0.75809979,
                                       'precision': 0.81818181,
                                       'prediction/mean': 0.54203272,
                                       'recall': 0.89999998},
                           'weights': {'dnn/hiddenlayer_0/bias': [-0.016185697, -0.010398977,
                                                                  -0.033804677],
                                       'dnn/hiddenlayer_0/kernel': [0.48682106, -0.76078391,
                                                                    -0.15355828, 0.70601809,
                                                                    -0.2874735, -0.60654324,
                                                                    0.91957009, -0.23120819,
                                                                    -0.72854155],
                                       'dnn/logits/bias': [0.1154918],
                                       'dnn/logits/kernel': [-0.021625044, 0.99874336,
                                                             -0.29861468]}},
 'dnn_dropout': {'metrics': {'average_loss': 3.4111073,
                             'global_step': 6.0,
                             'label/mean': 0.23610882,
                             'loss': 13.644429,
                             'prediction/mean': 0.083077699},
                 'weights': {'dnn/hiddenlayer_0/bias': [0.023460152, 0.070220232, 0.076258689,
                                                        -0.084741063, -0.031505764],
                             'dnn/hiddenlayer_0/kernel': [0.40442494, -0.78581434, 0.093756519,
                                                          0.53317428, -0.19088556, -0.62010282,
                                                          0.8545025, -0.17539728, -0.6495918,
                                                          -0.34501913, -0.0082483813, 0.12721705,
                                                          0.51721388, -0.77494353, 0.25411701],
                             'dnn/hiddenlayer_1/bias': [0.0, -0.023448586, 0.022942089,
                                                        0.077799097],
                             'dnn/hiddenlayer_1/kernel': [-0.35924318, 0.35420582, 0.19932082,
                                                          0.78013605, -0.65061748, 0.49245337,
                                                          0.42184904, -0.30204877, -0.43189716,
                                                          0.55984056, -0.17575857, 0.7834329,
                                                          -0.26896238, -0.61991107, 0.040389754,
                                                          -0.010502003, -0.25689608, 0.1535783,
                                                          -0.37515175, 0.078488283],
                             'dnn/logits/bias': [0.078465596],
                             'dnn/logits/kernel': [-0.66754711, 0.033312842, -1.0502685,
                                                   0.46864605]}},
 'dnn_multi_class': {'metrics': {'accuracy': 0.45833334,
                                 'average_loss': 0.93019319,
                                 'global_step': 6.0,
                                 'loss': 7.4415455},
                     'weights': {'dnn/hiddenlayer_0/bias': [-0.014294488, -0.10981394, -0.022581218,
                                                            0.104334, -0.014180304],
                                 'dnn/hiddenlayer_0/kernel': [0.49222824, -0.60622251, 0.043327853,
                                                              0.58767885, -0.23439264, -0.46465501,
                                                              0.59086072, -0.18307319, -0.57537985,
                                                              -0.17739519, -0.050992843,
                                                              -0.060778815, 0.3825022, -0.55918086,
                                                              0.19968903, -0.36199918, -0.20053987,
                                                              0.21449301, -0.7383911, 0.17135233,
                                                              -0.1007349, -0.53434283, 0.17348953,
                                                              -0.34942165, 0.6535278, 0.29037523,
                                                              -0.60726178, 0.30193684, 0.14078754,
                                                              0.41238195],
                                 'dnn/logits/bias': [-0.12369471, -0.072456092, 0.12344795],
                                 'dnn/logits/kernel': [-0.012572547, 0.7021805, -0.36147124,
                                                       -0.3614167, -0.2751599, -0.56748933,
                                                       -0.71744704, 0.21467917, -0.2559129,
                                                       0.58424199, 0.22193016, -0.524544,
                                                       0.13000821, 0.060921706, 0.18824092]}},
 'dnn_regressor': {'metrics': {'average_loss': 5.7140355,
                               'global_step': 6.0,
                               'label/mean': 0.31566051,
                               'loss': 45.712284,
                               'prediction/mean': -0.063171268},
                   'weights': {'dnn/hiddenlayer_0/bias': [-0.098775625, -0.048670594, 0.048693545,
                                                          -0.095812686],
                               'dnn/hiddenlayer_0/kernel': [0.36510757, -0.68575156, -0.076779388,
                                                            0.53676337, -0.13794598, -0.52453953,
                                                            1.0199842, 0.041975938, -0.79561454,
                                                            -0.41586775, -0.070664495,
                                                            -0.088973857],
                               'dnn/logits/bias': [0.081423573],
                               'dnn/logits/kernel': [0.013942586, 0.89104342, -0.50644076,
                                                     -0.18889797]}},
 'linear_binary': {'metrics': {'accuracy': 1.0,
                               'accuracy_baseline': 0.83333331,
                               'auc': 0.99999952,
                               'auc_precision_recall': 0.99999988,
                               'average_loss': 0.24295862,
                               'global_step': 6.0,
                               'label/mean': 0.83333331,
                               'loss': 0.97183448,
                               'precision': 1.0,
                               'prediction/mean': 0.74235058,
                               'recall': 1.0},
                   'weights': {'linear/linear_model/bias_weights': [0.42059714],
                               'linear/linear_model/color/weights': [0.18033072, 0.56617957,
                                                                     0.31508434],
                               'linear/linear_model/x/weights': [0.50115621, 0.48723671,
                                                                 0.46254775]}},
 'linear_regressor': {'metrics': {'average_loss': 2.2475173,
                                  'global_step': 6.0,
                                  'label/mean': 0.31566051,
                                  'loss': 17.980139,
                                  'prediction/mean': 0.24328159},
                      'weights': {'linear/linear_model/bias_weights': [0.23247173],
                                  'linear/linear_model/color/weights': [0.17302549, -0.29052374,
                                                                        0.235448],
                                  'linear/linear_model/x/weights': [0.30579644, -0.74738824,
                                                                    0.21121004]}},
 'linear_vocabulary': {'metrics': {'accuracy': 0.91666669,
                                   'average_loss': 0.5197314,
                                   'global_step': 6.0,
                                   'loss': 4.1578512},
                       'weights': {'linear/linear_model/bias_weights': [-0.28369978, 0.033014204,
                                                                        0.073288769],
                                   'linear/linear_model/color/weights': [-0.41182244, 0.60229844,
                                                                         -0.21728067, -0.49087602,
                                                                         -0.18094507, 0.29525194,
                                                                         -0.089349322, -0.13133365,
                                                                         0.079506397],
                                   'linear/linear_model/x/weights': [-0.55845511, -0.12313831,
                                                                     0.45768932, -0.46463749,
                                                                     0.25050068, -0.14359787,
                                                                     0.29034027, -0.1144224,
                                                                     0.091267973]}},
 'logit_fns': {'metrics': {'global_step': 6.0, 'loss': 1.34244},
               'weights': {'deep/hiddenlayer_0/bias': [-0.021539386, -0.085204214, -0.051959515],
                           'deep/hiddenlayer_0/kernel': [0.46180514, -0.61120397, -0.27138498,
                                                         0.77326643, -0.29151937, -0.54231751,
                                                         0.89779323, -0.28894916, -0.7352556],
                           'deep/logits/bias': [0.0481016],
                           'deep/logits/kernel': [-0.20113942, 0.89624971, -0.19282216],
                           'wide/linear_model/bias_weights': [0.0481016],
                           'wide/linear_model/x/weights': [0.73263288, -0.7852037, 0.092566147]}},
 'wide_deep_binary': {'metrics': {'accuracy': 0.16666667,
                                  'accuracy_baseline': 0.83333331,
                                  'auc': 0.49999982,
                                  'auc_precision_recall': 0.74791491,
                                  'average_loss': 0.82362729,
                                  'global_step': 6.0,
                                  'label/mean': 0.83333331,
                                  'loss': 3.2945092,
                                  'precision': 0.5,
                                  'prediction/mean': 0.4948608,
                                  'recall': 0.1},
                      'weights': {'dnn/hiddenlayer_0/bias': [-0.0021099176, -0.0026317076,
                                                             -0.00073465728],
                                  'dnn/hiddenlayer_0/kernel': [0.50545478, -0.84286577,
                                                               -0.084521897, 0.71233821,
                                                               -0.27031451, -0.62899238, 0.92109042,
                                                               -0.15590106, -0.77952176],
                                  'dnn/logits/bias': [0.0029561454],
                                  'dnn/logits/kernel': [-0.094164632, 1.0474985, -0.37904885],
                                  'linear/linear_model/bias_weights': [0.014780726],
                                  'linear/linear_model/color/weights': [0.0089895157, 0.016877269,
                                                                        0.0094869807]}},
 'wide_deep_regressor': {'metrics': {'average_loss': 6.7014203,
                                     'global_step': 6.0,
                                     'label/mean': 0.31566051,
                                     'loss': 53.611362,
                                     'prediction/mean': 0.40504399},
                         'weights': {'dnn/hiddenlayer_0/bias': [0.0016818159, 0.00078402256,
                                                                -0.00038199039, -0.0037927697],
                                     'dnn/hiddenlayer_0/kernel': [-0.0673526, 0.69975019,
                                                                  -0.2506502, -0.2399807,
                                                                  -0.28971553, -0.62405092,
                                                                  -0.54420626, 0.25391468,
                                                                  -0.33747691, 0.50947815,
                                                                  0.22754319, -0.39354819,
                                                                  0.26518619, 0.018395692,
                                                                  0.15004756, 0.6210866, 0.61308312,
                                                                  -0.10963688, -0.2748391,
                                                                  0.50977254],
                                     'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights': [0.25206834,
                                                                                                                      0.46770826,
                                                                                                                      -0.68779844,
                                                                                                                      0.5508008,
                                                                                                                      -0.41505578,
                                                                                                                      0.59435445],
                                     'dnn/logits/bias': [0.00039340992],
                                     'dnn/logits/kernel': [-0.48280025, 0.41018713, 0.33213115,
                                                           0.94957167],
                                     'linear/linear_model/bias_weights': [0.0019670499],
                                     'linear/linear_model/color/weights': [0.0028772731,
                                                                           -0.013536524,
                                                                           0.0052387165],
                                     'linear/linear_model/x/weights': [-0.001117577, -0.019877601,
                                                                       0.0076858024]}}}

# Produced by tests/data/make_head_estimators_reference.py under TF 2.15.1 + tensorflow-estimator
# 2.15 (`tf.compat.v1.estimator`'s *Estimator classes on TF 1.15's tf.contrib.estimator heads,
# graph mode): the checkpoint's tensor names, the trained variables, eval metrics and
# predictions of each scenario of canned_scenarios.head_estimators, to 8 significant digits.
HEAD_ESTIMATORS_CHECKPOINT_NAMES = {'baseline_estimator_binary': ['baseline/bias', 'baseline/bias/Ftrl', 'baseline/bias/Ftrl_1',
                               'global_step'],
 'dnn_estimator_multi_label': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/t_0/Adagrad',
                               'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/t_0/Adagrad',
                               'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights',
                               'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights/t_0/Adagrad',
                               'dnn/logits/bias', 'dnn/logits/bias/t_0/Adagrad',
                               'dnn/logits/kernel', 'dnn/logits/kernel/t_0/Adagrad',
                               'global_step'],
 'linear_estimator_multi_head': ['global_step', 'linear/linear_model/bias_weights',
                                 'linear/linear_model/bias_weights/part_0/Adagrad',
                                 'linear/linear_model/x/weights',
                                 'linear/linear_model/x/weights/part_0/Adagrad'],
 'linear_estimator_regression_2d': ['global_step', 'linear/linear_model/bias_weights',
                                    'linear/linear_model/bias_weights/part_0/Ftrl',
                                    'linear/linear_model/bias_weights/part_0/Ftrl_1',
                                    'linear/linear_model/color/weights',
                                    'linear/linear_model/color/weights/part_0/Ftrl',
                                    'linear/linear_model/color/weights/part_0/Ftrl_1',
                                    'linear/linear_model/x/weights',
                                    'linear/linear_model/x/weights/part_0/Ftrl',
                                    'linear/linear_model/x/weights/part_0/Ftrl_1'],
 'wide_deep_estimator_multi_class': ['dnn/hiddenlayer_0/bias', 'dnn/hiddenlayer_0/bias/Adagrad',
                                     'dnn/hiddenlayer_0/kernel', 'dnn/hiddenlayer_0/kernel/Adagrad',
                                     'dnn/logits/bias', 'dnn/logits/bias/Adagrad',
                                     'dnn/logits/kernel', 'dnn/logits/kernel/Adagrad',
                                     'global_step', 'linear/linear_model/bias_weights',
                                     'linear/linear_model/bias_weights/Ftrl',
                                     'linear/linear_model/bias_weights/Ftrl_1',
                                     'linear/linear_model/color/weights',
                                     'linear/linear_model/color/weights/Ftrl',
                                     'linear/linear_model/color/weights/Ftrl_1']}
HEAD_ESTIMATORS_ORIGINAL = {'baseline_estimator_binary': {'metrics': {'accuracy': 0.83333331,
                                           'accuracy_baseline': 0.83333331,
                                           'auc': 0.49999988,
                                           'auc_precision_recall': 0.91666663,
                                           'average_loss': 0.51206011,
                                           'global_step': 6.0,
                                           'label/mean': 0.83333331,
                                           'loss': 4.0964808,
                                           'precision': 0.83333331,
                                           'prediction/mean': 0.67891163,
                                           'recall': 1.0},
                               'predictions': {'all_class_ids': [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                                                                 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0,
                                                                 1],
                                               'all_classes': ['0', '1', '0', '1', '0', '1', '0',
                                                               '1', '0', '1', '0', '1', '0', '1',
                                                               '0', '1', '0', '1', '0', '1', '0',
                                                               '1', '0', '1'],
                                               'class_ids': [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                                               'classes': ['1', '1', '1', '1', '1', '1', '1', '1',
                                                           '1', '1', '1', '1'],
                                               'logistic': [0.67891163, 0.67891163, 0.67891163,
                                                            0.67891163, 0.67891163, 0.67891163,
                                                            0.67891163, 0.67891163, 0.67891163,
                                                            0.67891163, 0.67891163, 0.67891163],
                                               'logits': [0.74877465, 0.74877465, 0.74877465,
                                                          0.74877465, 0.74877465, 0.74877465,
                                                          0.74877465, 0.74877465, 0.74877465,
                                                          0.74877465, 0.74877465, 0.74877465],
                                               'probabilities': [0.32108837, 0.67891169, 0.32108837,
                                                                 0.67891169, 0.32108837, 0.67891169,
                                                                 0.32108837, 0.67891169, 0.32108837,
                                                                 0.67891169, 0.32108837, 0.67891169,
                                                                 0.32108837, 0.67891169, 0.32108837,
                                                                 0.67891169, 0.32108837, 0.67891169,
                                                                 0.32108837, 0.67891169, 0.32108837,
                                                                 0.67891169, 0.32108837,
                                                                 0.67891169]},
                               'weights': {'baseline/bias': [0.74877465]}},
 'dnn_estimator_multi_label': {'metrics': {'accuracy/positive_threshold_0.3': 0.5138889,
                                           'auc': 0.74826258,
                                           'auc_precision_recall': 0.78813881,
                                           'average_loss': 0.61930895,
                                           'global_step': 6.0,
                                           'loss': 1.2386179,
                                           'precision/positive_threshold_0.3': 0.5138889,
                                           'recall/positive_threshold_0.3': 1.0},
                               'predictions': {'logits': [0.77331799, -0.47571057, 0.28449833,
                                                          0.90963423, -0.50569612, -0.78982949,
                                                          0.22771102, -0.027132891, -0.33550861,
                                                          0.21179396, 0.21279436, 0.55390507,
                                                          0.31105885, -0.023476474, -0.11303654,
                                                          0.70086241, -0.11687688, 0.20084013,
                                                          0.64911187, -0.36364585, -0.28181136,
                                                          0.39856279, -0.11722098, -0.49972582,
                                                          0.79558671, -0.50371951, -0.073657155,
                                                          0.57854658, 0.30066794, 1.4777782,
                                                          0.29108667, -0.065496378, -0.42786247,
                                                          0.27572322, 0.15499389, 0.49264932],
                                               'probabilities': [0.6842382, 0.3832655, 0.57064873,
                                                                 0.71292531, 0.376203, 0.31220528,
                                                                 0.556683, 0.4932172, 0.41690087,
                                                                 0.55275148, 0.55299878, 0.63504112,
                                                                 0.57714373, 0.49413115, 0.47177091,
                                                                 0.66837895, 0.47081399, 0.55004191,
                                                                 0.65681028, 0.4100773, 0.43000975,
                                                                 0.5983423, 0.47072828, 0.37760511,
                                                                 0.68902963, 0.37666696, 0.48159403,
                                                                 0.64073288, 0.57460576, 0.81423676,
                                                                 0.57226211, 0.48363176, 0.39463687,
                                                                 0.56849742, 0.53867114,
                                                                 0.62073034]},
                               'weights': {'dnn/hiddenlayer_0/bias': [-0.0058634384, 0.0030460171,
                                                                      0.11754204, -0.077054873],
                                           'dnn/hiddenlayer_0/kernel': [-0.052789271, 0.71210659,
                                                                        -0.3219772, -0.18423888,
                                                                        -0.29631054, -0.62336582,
                                                                        -0.46430802, 0.20292118,
                                                                        -0.32151514, 0.50016129,
                                                                        0.34563136, -0.34025761,
                                                                        0.27084312, -0.049286027,
                                                                        0.15108737, 0.58030915,
                                                                        0.63467097, -0.10330753,
                                                                        -0.33703512, 0.52694857],
                                           'dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights': [0.25038096,
                                                                                                                            0.45749715,
                                                                                                                            -0.7166419,
                                                                                                                            0.53387356,
                                                                                                                            -0.41124579,
                                                                                                                            0.5252527],
                                           'dnn/logits/bias': [0.093803644, 0.053925879,
                                                               -0.14037283],
                                           'dnn/logits/kernel': [-0.43969914, 0.3463687, 0.26571846,
                                                                 0.83263183, -0.73109668,
                                                                 0.64895469, 0.38659614,
                                                                 -0.23402002, -0.5633651,
                                                                 0.61032939, -0.11038917,
                                                                 0.75725543]}},
 'linear_estimator_multi_head': {'metrics': {'accuracy/cls': 0.83333331,
                                             'average_loss/cls': 0.67423934,
                                             'average_loss/reg': 1.8152217,
                                             'global_step': 6.0,
                                             'label/mean/reg': 0.23610882,
                                             'loss': 1.5818501,
                                             'loss/cls': 0.67423934,
                                             'loss/reg': 1.8152217,
                                             'prediction/mean/reg': 0.19980681},
                                 'predictions': {'cls/all_class_ids': [0, 1, 2, 0, 1, 2, 0, 1, 2, 0,
                                                                       1, 2, 0, 1, 2, 0, 1, 2, 0, 1,
                                                                       2, 0, 1, 2, 0, 1, 2, 0, 1, 2,
                                                                       0, 1, 2, 0, 1, 2],
                                                 'cls/all_classes': ['0', '1', '2', '0', '1', '2',
                                                                     '0', '1', '2', '0', '1', '2',
                                                                     '0', '1', '2', '0', '1', '2',
                                                                     '0', '1', '2', '0', '1', '2',
                                                                     '0', '1', '2', '0', '1', '2',
                                                                     '0', '1', '2', '0', '1', '2'],
                                                 'cls/class_ids': [2, 2, 2, 2, 2, 1, 2, 2, 2, 1, 1,
                                                                   0],
                                                 'cls/classes': ['2', '2', '2', '2', '2', '1', '2',
                                                                 '2', '2', '1', '1', '0'],
                                                 'cls/logits': [-1.2505805, -0.050590947,
                                                                0.93730581, -2.0492346, 0.17329971,
                                                                1.113467, -0.78434765, 0.042962626,
                                                                0.54438794, -0.48140055, 0.14620475,
                                                                0.34805691, -0.72566712, 0.1082022,
                                                                0.4773154, -0.95376635, 0.44521537,
                                                                0.2855798, -0.4698346, 0.12054072,
                                                                0.193661, -0.97536123, 0.29368883,
                                                                0.40724492, -1.0501522, -0.43494415,
                                                                1.1188943, -0.57861525, 0.49714923,
                                                                0.097883105, -0.6072669, 0.30910307,
                                                                0.17811522, 0.72003293, 0.55504966,
                                                                -0.74750996],
                                                 'cls/probabilities': [0.075549081, 0.25082919,
                                                                       0.67362177, 0.029528964,
                                                                       0.27257285, 0.69789815,
                                                                       0.1415744, 0.3238031,
                                                                       0.53462255, 0.19360355,
                                                                       0.36264262, 0.44375387,
                                                                       0.15077852, 0.3471238,
                                                                       0.50209767, 0.11758582,
                                                                       0.4763487, 0.40606549,
                                                                       0.21069342, 0.38023114,
                                                                       0.40907547, 0.11705838,
                                                                       0.41643184, 0.46650976,
                                                                       0.086207062, 0.15948661,
                                                                       0.75430632, 0.16951418,
                                                                       0.49705508, 0.33343065,
                                                                       0.17564064, 0.43913642,
                                                                       0.38522291, 0.48113957,
                                                                       0.40796199, 0.11089841],
                                                 'reg/predictions': [0.70556021, -0.4055717,
                                                                     0.67480576, 0.41821945,
                                                                     0.46009159, -0.78995287,
                                                                     0.67370969, -0.26016617,
                                                                     2.167012, -0.83714914,
                                                                     -0.11257075, -0.29630631]},
                                 'weights': {'linear/linear_model/bias_weights': [-0.35554561,
                                                                                  0.24528046,
                                                                                  0.128232,
                                                                                  0.20358931],
                                             'linear/linear_model/x/weights': [-0.4874742,
                                                                               -0.18904667,
                                                                               0.44235581,
                                                                               0.39053777,
                                                                               -0.28069293,
                                                                               0.17167756,
                                                                               0.0099928677,
                                                                               -0.73705626,
                                                                               0.078893855,
                                                                               -0.03175639,
                                                                               0.025273683,
                                                                               0.11032596]}},
 'linear_estimator_regression_2d': {'metrics': {'average_loss': 1.5794182,
                                                'global_step': 6.0,
                                                'label/mean': 0.1769232,
                                                'loss': 3.1588364,
                                                'prediction/mean': 0.15144964},
                                    'predictions': {'predictions': [0.23095852, -0.14376509,
                                                                    -1.6498545, 1.7223121,
                                                                    0.46531874, 0.18695264,
                                                                    0.48221886, -0.73998356,
                                                                    -0.11700414, 0.21030372,
                                                                    -0.7738356, 0.5288381,
                                                                    0.37702459, 1.1954666,
                                                                    -0.90868914, 1.0256437,
                                                                    1.482023, 0.045220412,
                                                                    -0.54460508, -0.52256072,
                                                                    -0.59637648, 0.88488394,
                                                                    0.58789915, -0.59161979]},
                                    'weights': {'linear/linear_model/bias_weights': [0.15320839,
                                                                                     0.077003337],
                                                'linear/linear_model/color/weights': [0.12182289,
                                                                                      -0.13546291,
                                                                                      -0.29292068,
                                                                                      0.19466574,
                                                                                      0.19866462,
                                                                                      -0.099427156],
                                                'linear/linear_model/x/weights': [0.025563346,
                                                                                  0.2002694,
                                                                                  -0.73064637,
                                                                                  0.2487403,
                                                                                  0.20761999,
                                                                                  -0.54981667]}},
 'wide_deep_estimator_multi_class': {'metrics': {'accuracy': 0.41666666,
                                                 'average_loss': 1.0900354,
                                                 'global_step': 6.0,
                                                 'loss': 1.0900354},
                                     'predictions': {'all_class_ids': [0, 1, 2, 0, 1, 2, 0, 1, 2, 0,
                                                                       1, 2, 0, 1, 2, 0, 1, 2, 0, 1,
                                                                       2, 0, 1, 2, 0, 1, 2, 0, 1, 2,
                                                                       0, 1, 2, 0, 1, 2],
                                                     'all_classes': ['low', 'mid', 'high', 'low',
                                                                     'mid', 'high', 'low', 'mid',
                                                                     'high', 'low', 'mid', 'high',
                                                                     'low', 'mid', 'high', 'low',
                                                                     'mid', 'high', 'low', 'mid',
                                                                     'high', 'low', 'mid', 'high',
                                                                     'low', 'mid', 'high', 'low',
                                                                     'mid', 'high', 'low', 'mid',
                                                                     'high', 'low', 'mid', 'high'],
                                                     'class_ids': [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                                   1],
                                                     'classes': ['mid', 'mid', 'mid', 'mid', 'mid',
                                                                 'mid', 'mid', 'mid', 'mid', 'mid',
                                                                 'mid', 'mid'],
                                                     'logits': [-0.18258095, 1.7640496, -0.61955202,
                                                                -0.14409372, 1.3164632, -0.45508388,
                                                                -0.098696448, 0.24860027,
                                                                -0.10353644, -0.14789727, 1.3984185,
                                                                -0.48836902, -0.088819221,
                                                                0.73376602, -0.24602088,
                                                                -0.096310034, 0.87503493,
                                                                -0.2993294, -1.7936976, 0.64496976,
                                                                -1.2967377, -0.0385928, 0.20428522,
                                                                -0.056051139, -0.48480597,
                                                                0.32902661, -0.30973744,
                                                                -0.20489766, 1.9993098, -0.7039597,
                                                                -0.31234524, 0.12194151, -0.1584402,
                                                                -0.7019611, -0.55887765,
                                                                -1.4208486],
                                                     'probabilities': [0.11559309, 0.80973488,
                                                                       0.074672006, 0.16553332,
                                                                       0.71317691, 0.12128978,
                                                                       0.29322001, 0.41497573,
                                                                       0.29180428, 0.15611392,
                                                                       0.73282129, 0.11106485,
                                                                       0.24207747, 0.55105966,
                                                                       0.20686291, 0.22432807,
                                                                       0.59256136, 0.18311055,
                                                                       0.070914559, 0.81252199,
                                                                       0.11656343, 0.30697387,
                                                                       0.39136499, 0.30166113,
                                                                       0.22482681, 0.50733072,
                                                                       0.26784247, 0.093719259,
                                                                       0.84938383, 0.056896947,
                                                                       0.26952425, 0.41610807,
                                                                       0.31436771, 0.37862721,
                                                                       0.43686998, 0.18450278]},
                                     'weights': {'dnn/hiddenlayer_0/bias': [-0.0023476142,
                                                                            0.00024327954,
                                                                            -0.00055811473],
                                                 'dnn/hiddenlayer_0/kernel': [0.50499207,
                                                                              -0.84444577,
                                                                              -0.082181357,
                                                                              0.71309537,
                                                                              -0.2726655,
                                                                              -0.62827653,
                                                                              0.92265159,
                                                                              -0.15745421,
                                                                              -0.78030205],
                                                 'dnn/logits/bias': [-0.0017821258, -0.0018892328,
                                                                     0.0023219788],
                                                 'dnn/logits/kernel': [-0.081157342, 0.85555089,
                                                                       -0.30695879, -0.29691023,
                                                                       -0.35793471, -0.76576132,
                                                                       -0.66719061, 0.31588826,
                                                                       -0.41192192],
                                                 'linear/linear_model/bias_weights': [-0.008910628,
                                                                                      -0.0094461627,
                                                                                      0.011609892],
                                                 'linear/linear_model/color/weights': [-0.0033350063,
                                                                                       -0.0014822148,
                                                                                       0.0040294426,
                                                                                       -0.0068486184,
                                                                                       -0.0063010124,
                                                                                       0.00963913,
                                                                                       -0.0010280656,
                                                                                       -0.0053589437,
                                                                                       0.0066777519]}}}

_TOLERANCE = 1e-5


def _check_against_the_original(scenario, trained, names, metrics):
    assert names == CHECKPOINT_NAMES[scenario]  # Adagrad's/FTRL's slots included
    expected = ORIGINAL[scenario]
    assert sorted(trained) == sorted(expected["weights"])
    for name, values in expected["weights"].items():
        np.testing.assert_allclose(trained[name].ravel(), values, rtol=0, atol=_TOLERANCE,
                                   err_msg=name)
    assert sorted(metrics) == sorted(expected["metrics"])
    for key, value in expected["metrics"].items():
        assert metrics[key] == pytest.approx(value, abs=_TOLERANCE), key


@pytest.mark.parametrize("scenario", sorted(set(ORIGINAL) - {"dnn_binary_mirrored"}))
def test_same_seed_and_data_give_the_originals_variables_and_metrics(tmp_path, scenario):
    estimator, labels = canned_scenarios.estimators(tf1.estimator, str(tmp_path))[scenario]
    _check_against_the_original(scenario, *canned_scenarios.train_and_evaluate(estimator,
                                                                               labels))


@pytest.mark.parametrize("scenario", sorted(HEAD_ESTIMATORS_ORIGINAL))
def test_estimators_on_contrib_heads_give_the_originals_variables_metrics_and_predictions(
        tmp_path, scenario):
    estimator, labels = canned_scenarios.head_estimators(
        tf1.estimator, tf1.contrib.estimator, str(tmp_path))[scenario]
    trained, names, metrics, predictions = canned_scenarios.train_evaluate_and_predict(
        estimator, labels)
    assert names == HEAD_ESTIMATORS_CHECKPOINT_NAMES[scenario]
    expected = HEAD_ESTIMATORS_ORIGINAL[scenario]
    assert sorted(trained) == sorted(expected["weights"])
    for name, values in expected["weights"].items():
        np.testing.assert_allclose(trained[name].ravel(), values, rtol=0, atol=_TOLERANCE,
                                   err_msg=name)
    assert metrics == pytest.approx(expected["metrics"], abs=_TOLERANCE)
    assert sorted(predictions) == sorted(expected["predictions"])
    for key, values in expected["predictions"].items():
        values, got = np.asarray(values), np.ravel(predictions[key])
        if values.dtype.kind in "fi" and got.dtype.kind == "f":
            np.testing.assert_allclose(got, values, rtol=0, atol=_TOLERANCE, err_msg=key)
        else:
            assert [v.decode() if isinstance(v, bytes) else v for v in got.tolist()] == \
                values.tolist(), key


def test_the_originals_head_estimator_checkpoint_predicts_its_values_and_trains_on(tmp_path):
    # DNNEstimator on multi_label_head, written by the original (its partitioned variables'
    # Adagrad slots `.../t_0/Adagrad` included).
    scenario = "dnn_estimator_multi_label"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "data", "head_estimator_ckpt"),
                    tmp_path / scenario)
    estimator, labels = canned_scenarios.head_estimators(
        tf1.estimator, tf1.contrib.estimator, str(tmp_path))[scenario]
    predictions = list(estimator.predict(canned_scenarios.predict_input_fn))
    expected = HEAD_ESTIMATORS_ORIGINAL[scenario]["predictions"]
    np.testing.assert_allclose(np.ravel([p["probabilities"] for p in predictions]),
                               expected["probabilities"], rtol=0, atol=_TOLERANCE)
    estimator.train(canned_scenarios.input_fn(labels), steps=1)
    assert estimator.get_variable_value("global_step") == canned_scenarios.TRAIN_STEPS + 1


# TF 1.15's v1 signatures (after `self`), and the arguments TF 2.x's v1 classes appended.
_HEAD_ESTIMATOR_ARGUMENTS = {
    "DNNEstimator": [
        ("head", None), ("hidden_units", None), ("feature_columns", None), ("model_dir", None),
        ("optimizer", "Adagrad"), ("activation_fn", tf.nn.relu), ("dropout", None),
        ("input_layer_partitioner", None), ("config", None), ("warm_start_from", None),
        ("batch_norm", False)],
    "LinearEstimator": [
        ("head", None), ("feature_columns", None), ("model_dir", None), ("optimizer", "Ftrl"),
        ("config", None), ("partitioner", None), ("sparse_combiner", "sum"),
        ("warm_start_from", None)],
    "DNNLinearCombinedEstimator": [
        ("head", None), ("model_dir", None), ("linear_feature_columns", None),
        ("linear_optimizer", "Ftrl"), ("dnn_feature_columns", None),
        ("dnn_optimizer", "Adagrad"), ("dnn_hidden_units", None),
        ("dnn_activation_fn", tf.nn.relu), ("dnn_dropout", None),
        ("input_layer_partitioner", None), ("config", None),
        ("linear_sparse_combiner", "sum"), ("batch_norm", False)],
    "BaselineEstimator": [("head", None), ("model_dir", None), ("optimizer", "Ftrl"),
                          ("config", None)],
}


@pytest.mark.parametrize("name", sorted(_HEAD_ESTIMATOR_ARGUMENTS))
def test_estimators_on_heads_take_the_originals_arguments_at_its_paths(name):
    cls = getattr(tf1.estimator, name)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [(p.name, None if p.default is p.empty else p.default)
            for p in parameters] == _HEAD_ESTIMATOR_ARGUMENTS[name]
    assert [p.name for p in parameters if p.default is p.empty] == [
        p for p in ("head", "hidden_units", "feature_columns")
        if p in [q.name for q in parameters]]
    module = {"DNN": "dnn", "Linear": "linear", "DNNLinearCombined": "dnn_linear_combined",
              "Baseline": "baseline"}[name[:-len("Estimator")]]
    path = importlib.import_module(f"tpu_estimator_compat.v1.python.estimator.canned.{module}")
    assert getattr(path, name) is cls  # tensorflow.python.estimator.canned.<module>
    assert issubclass(cls, tf1.estimator.Estimator)


def test_estimators_on_heads_reject_what_is_not_a_tf1_head_and_the_originals_bad_arguments():
    fc = tf.compat.v1.feature_column
    columns = [fc.numeric_column("x", shape=[3])]
    with pytest.raises(TypeError) as raised:
        tf1.estimator.DNNEstimator("multi_label", [2], columns)
    assert str(raised.value) == (
        "head must be a TF 1.x head (`_Head`), such as tf.contrib.estimator.multi_label_head("
        "n_classes), multi_class_head(n_classes), binary_classification_head() or "
        "regression_head(label_dimension=...). Given type: <class 'str'>.")
    head = tf1.contrib.estimator.regression_head()
    with pytest.raises(ValueError, match="^Either linear_feature_columns or "
                                         "dnn_feature_columns must be defined.$"):
        tf1.estimator.DNNLinearCombinedEstimator(head)
    with pytest.raises(ValueError, match="sparse_combiner must be one of"):
        tf1.estimator.LinearEstimator(head, columns, sparse_combiner="max")
    with pytest.raises(TypeError, match="head must be a TF 1.x head"):
        tf1.estimator.BaselineEstimator(None)
    # TF 2.x's tf.estimator.DNNEstimator took the v2-style heads: another class.
    v2_estimator = importlib.import_module("tpu_estimator_compat.v2.estimator")
    assert v2_estimator.DNNEstimator is not tf1.estimator.DNNEstimator


def test_under_a_mirrored_strategy_the_originals_unpartitioned_variables_and_numbers(
        tmp_path, two_devices):
    # TF 1.x's strategies dropped partitioners: the slots are `dnn/dnn/<variable>/Adagrad`
    # there; evaluation on one device restores them into partitioned variables.
    estimator = canned_scenarios.mirrored_dnn_classifier(
        tf1.estimator, str(tmp_path), two_devices)
    _check_against_the_original(
        "dnn_binary_mirrored", *canned_scenarios.train_and_evaluate(estimator, "binary"))


def test_the_originals_checkpoint_restores_and_predicts_the_originals_values(tmp_path):
    shutil.copytree(os.path.join(os.path.dirname(__file__), "data", "canned_dnn_ckpt"),
                    tmp_path / "dnn_binary")
    estimator, _ = canned_scenarios.estimators(tf1.estimator, str(tmp_path))["dnn_binary"]
    predictions = list(estimator.predict(canned_scenarios.predict_input_fn))
    np.testing.assert_allclose([p["logistic"][0] for p in predictions],
                               ORIGINAL["dnn_binary"]["logistic"], rtol=0, atol=_TOLERANCE)
    first = predictions[0]
    assert sorted(first) == ["all_class_ids", "all_classes", "class_ids", "classes",
                             "logistic", "logits", "probabilities"]
    assert first["probabilities"] == pytest.approx(
        [1 - first["logistic"][0], first["logistic"][0]])
    assert first["class_ids"][0] == int(first["logistic"][0] > 0.5)
    assert first["classes"][0] == str(first["class_ids"][0]).encode()
    assert list(first["all_classes"]) == [b"0", b"1"]


def _serving_input_receiver_fn():  # serialized tf.Examples: every head signature applies
    return tf1.estimator.export.build_parsing_serving_input_receiver_fn({
        "x": tf.io.FixedLenFeature((3,), tf.float32),
        "color": tf.io.FixedLenFeature([], tf.string)})()


def test_best_exporter_exports_when_the_loss_improves_and_keeps_exports_to_keep(tmp_path):
    estimator, labels = canned_scenarios.estimators(
        tf1.estimator, str(tmp_path))["linear_regressor"]
    estimator.train(canned_scenarios.input_fn(labels), steps=1)
    exporter = tf1.estimator.BestExporter(
        name="best", serving_input_receiver_fn=_serving_input_receiver_fn, exports_to_keep=2)
    export_path = str(tmp_path / "export" / "best")
    checkpoint = estimator.latest_checkpoint()
    exported = [exporter.export(estimator, export_path, checkpoint, {"loss": loss}, False)
                for loss in (5.0, 6.0, 4.0, 4.5, 3.0)]
    # The first evaluation is exported, then only the smaller losses 4.0 and 3.0.
    assert [path is not None for path in exported] == [True, False, True, False, True]
    kept = sorted(os.listdir(export_path))
    assert [os.path.join(export_path, k) for k in kept] == [
        p.decode() if isinstance(p, bytes) else p for p in (exported[2], exported[4])]
    loaded = tf.saved_model.load(os.path.join(export_path, kept[-1]))
    assert sorted(loaded.signatures) == ["predict", "regression", "serving_default"]
    assert exporter.name == "best"


def test_best_exporter_rejects_a_bad_compare_fn_or_exports_to_keep():
    with pytest.raises(ValueError, match="`compare_fn` must not be None."):
        tf1.estimator.BestExporter(compare_fn=None)
    with pytest.raises(ValueError, match="must include current_eval_result argument"):
        tf1.estimator.BestExporter(compare_fn=lambda best_eval_result: True)
    with pytest.raises(ValueError, match=r"not expected args: \['extra'\]"):
        tf1.estimator.BestExporter(
            compare_fn=lambda best_eval_result, current_eval_result, extra: True)
    with pytest.raises(ValueError, match="must be a positive number. Got 0"):
        tf1.estimator.BestExporter(exports_to_keep=0)


def test_parse_example_specs_add_the_label_and_weight_features():
    fc = tf.compat.v1.feature_column
    columns = [fc.numeric_column("x", shape=[3]),
               fc.categorical_column_with_vocabulary_list("color", ["a", "b"])]
    spec = tf1.estimator.classifier_parse_example_spec(columns, "label", weight_column="w")
    assert spec == {"x": tf.io.FixedLenFeature((3,), tf.float32),
                    "color": tf.io.VarLenFeature(tf.string),
                    "label": tf.io.FixedLenFeature((1,), tf.int64),
                    "w": tf.io.FixedLenFeature((1,), tf.float32)}
    spec = tf1.estimator.regressor_parse_example_spec(columns, "y", label_dimension=2)
    assert spec["y"] == tf.io.FixedLenFeature((2,), tf.float32)
    with pytest.raises(ValueError, match="label should not be used as feature. label_key: x"):
        tf1.estimator.regressor_parse_example_spec(columns, "x")


def test_bad_arguments_raise_the_originals_errors_naming_the_fix(tmp_path):
    fc = tf.compat.v1.feature_column
    columns = [fc.numeric_column("x", shape=[3])]
    with pytest.raises(ValueError, match="n_classes must be > 2: 1."):
        tf1.estimator.DNNClassifier([2], columns, n_classes=1)
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        tf1.estimator.LinearRegressor(columns, loss_reduction="none")
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature_columns"):
        tf1.estimator.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError, match="units must be an int.  Given type: <class 'float'>"):
        tf1.estimator.experimental.dnn_logit_fn_builder(1.0, [2], columns, tf.nn.relu, None,
                                                        None, False)
    with pytest.raises(ValueError, match="logit_fn should return a Tensor or a dictionary "
                                         "mapping strings to Tensors.  logit_fn returned: 3"):
        tf1.estimator.experimental.call_logit_fn(lambda features: 3, {}, "train", None, None)
    estimator = tf1.estimator.DNNRegressor([2], columns, optimizer="Adadelta",
                                           model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"Unsupported optimizer name: Adadelta. Supported "
                                         r"names are: \('Adagrad', 'Adam', 'Ftrl'"):
        estimator.train(canned_scenarios.input_fn("regression"), steps=1)


def test_a_vocabulary_classifier_predicts_and_exports_its_classes(tmp_path):
    estimator, labels = canned_scenarios.estimators(
        tf1.estimator, str(tmp_path))["linear_vocabulary"]
    estimator.train(canned_scenarios.input_fn(labels), steps=6)
    predictions = list(estimator.predict(canned_scenarios.predict_input_fn))
    vocabulary = [b"low", b"mid", b"high"]
    for p in predictions:
        assert p["class_ids"][0] == np.argmax(p["probabilities"])
        assert p["classes"][0] == vocabulary[p["class_ids"][0]]
        assert list(p["all_classes"]) == vocabulary and list(p["all_class_ids"]) == [0, 1, 2]
    # 11 of 12 right after 6 steps, as the original's accuracy of 0.91666669 says.
    assert sum(p["classes"][0] == label for p, label in
               zip(predictions, canned_scenarios.LABELS["strings"])) == 11
    path = estimator.export_saved_model(str(tmp_path / "export"), _serving_input_receiver_fn)
    loaded = tf.saved_model.load(path.decode() if isinstance(path, bytes) else path)
    assert sorted(loaded.signatures) == ["classification", "predict", "serving_default"]
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=canned_scenarios.X[0])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a"]))}))
    served = loaded.signatures["classification"](
        inputs=tf.constant([example.SerializeToString()]))
    assert list(served["classes"].numpy()[0]) == vocabulary
    np.testing.assert_allclose(served["scores"].numpy()[0], predictions[0]["probabilities"],
                               rtol=1e-6)
