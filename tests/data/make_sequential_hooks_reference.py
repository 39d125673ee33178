"""Reference numbers of hooks that session.run train ops (TF-GAN's GANEstimator layout) for
tests/test_session_stand_in.py: run on the original (/work/orig/bin/python), prints JSON.

Each kind of tests/sequential_hooks_model.py trains on tf.compat.v1.estimator.Estimator
(graph mode) to max_steps=2, then a new Estimator in the same model_dir resumes to
max_steps=4: the variables after each call and what the hooks' session.run calls returned;
then 'sequential' on the finite and the short input, to max_steps=10.

With resource variables, as the package's: TF1's default ref variables give the same weights,
but the losses a train op returns race with its in-place updates (the read feeding the loss
may run after the update), giving other numbers.
"""
import json
import os
import sys
import tempfile

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import sequential_hooks_model as model  # noqa: E402  pylint: disable=wrong-import-position


def variables(estimator):
    return {name: estimator.get_variable_value(name).tolist()
            for name in estimator.get_variable_names()}


def main():
    tf.compat.v1.disable_v2_behavior()
    tf.compat.v1.enable_resource_variables()
    tf1 = tf.compat.v1
    results = {}
    for kind in ("sequential", "custom"):
        returned = []
        model_dir = tempfile.mkdtemp()
        calls = []
        for max_steps in (2, 4):
            hooks = ([model.make_hook_classes(tf1)[1](returned)] if kind == "custom" else [])
            estimator = tf1.estimator.Estimator(model.make_model_fn(tf1, kind, returned),
                                                model_dir=model_dir)
            estimator.train(model.input_fn, hooks=hooks, max_steps=max_steps)
            calls.append(variables(estimator))
        results[kind] = {"variables": calls, "returned": returned}
    for kind, input_fn in (("finite", model.finite_input_fn), ("short", model.short_input_fn)):
        returned = []
        estimator = tf1.estimator.Estimator(model.make_model_fn(tf1, "sequential", returned),
                                            model_dir=tempfile.mkdtemp())
        estimator.train(input_fn, max_steps=10)
        results[kind] = {"variables": [variables(estimator)], "returned": returned}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
