"""The corpus's numbers checks (tests/real_programs/numbers_checks.py): the eval re-check's
reading of Estimator logs and its comparison, the replica check's comparison of weights."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "real_programs"))

import numbers_checks  # noqa: E402

TRAINED = (
    "I1128 12:37:09.37 1 checkpoint_saves.py:150] Saving checkpoints for 3 into out/model.ckpt.\n"
    "I1128 12:37:20.11 1 evaluation.py:240] Saving dict for global step 2: eval_accuracy = 0.5,"
    " eval_loss = 0.6931, global_step = 2\n"
    "I1128 12:37:35.66 1 evaluation.py:240] Saving dict for global step 3: eval_accuracy = 1.0,"
    " eval_loss = 0.6867, global_step = 3, masked_lm_accuracy = 0.125\n"
    "I1128 12:37:35.67 1 run_classifier.py:485]   eval_accuracy = 1.0\n")


def fresh(accuracy="1.0", loss="0.6867", step=3):
    return ("Saving dict for global step %d: eval_accuracy = %s, eval_loss = %s, global_step"
            " = %d, masked_lm_accuracy = 0.125\n" % (step, accuracy, loss, step))


def test_eval_results_reads_every_saving_dict_line_in_order():
    assert numbers_checks.eval_results(TRAINED) == [
        (2, {"eval_accuracy": 0.5, "eval_loss": 0.6931, "global_step": 2.0}),
        (3, {"eval_accuracy": 1.0, "eval_loss": 0.6867, "global_step": 3.0,
             "masked_lm_accuracy": 0.125})]
    assert numbers_checks.eval_results("Saving dict for global step 1: top = [1 2], x = 0.5") \
        == [(1, {"top": "[1 2]", "x": 0.5})]


def test_eval_recheck_compares_the_last_evaluation_with_the_fresh_one_of_its_step():
    trained = numbers_checks.eval_results(TRAINED)
    assert numbers_checks.compare_evaluations(
        trained, numbers_checks.eval_results(fresh(loss="0.6869"))) == (
        "ok (step 3: 2 metric(s) equal, loss diff 2.0e-04)")
    # The BERT classifier: accuracy 1.0 in the training process, 0.5 from its
    # checkpoint.
    assert numbers_checks.compare_evaluations(
        trained, numbers_checks.eval_results(fresh(accuracy="0.5", loss="0.6932"))) == (
        "FAIL: eval_accuracy = 1.0 in-process, 0.5 fresh (step 3)")
    assert numbers_checks.compare_evaluations(
        trained, numbers_checks.eval_results(fresh(loss="0.6873"))) == (
        "FAIL: eval_loss = 0.6867 in-process, 0.6873 fresh (step 3)")  # over 5e-4
    assert numbers_checks.compare_evaluations(
        trained, numbers_checks.eval_results(fresh(step=2))) == (
        "FAIL: the fresh process evaluated global step(s) [2], not 3")
    assert numbers_checks.compare_evaluations([], trained) == (
        "FAIL: the training process logged no evaluation")


def test_model_weights_leave_out_optimizer_slots():
    values = dict.fromkeys(["dense/kernel", "dense/kernel/adam_m", "dense/kernel/Adam_1",
                            "dense/bias", "dense/bias/Momentum", "dense_1/kernel"])
    assert numbers_checks.model_weights(values) == ["dense/bias", "dense/kernel",
                                                    "dense_1/kernel"]


def test_replica_check_allows_rounding_and_fails_on_a_different_update():
    initial = {"w": np.array([1.0, -2.0]), "b": np.zeros(2), "b/Adam": np.zeros(2)}
    single = {"w": np.array([0.9, -1.9]), "b": np.array([1e-4, 0.0]), "b/Adam": np.ones(2)}
    rounded = {"w": np.array([0.9 + 1e-6, -1.9]), "b": np.array([1e-4 + 1e-8, 1e-12]),
               "b/Adam": 8 * np.ones(2)}  # slots: the sum's arithmetic may scale them
    assert numbers_checks.compare_weights(initial, rounded, single) == (
        "ok (w differs by 1.0e-06, 0.0083 of its tolerance (largest update 1.0e-01, 2 weights))")
    # Replica 0's own gradient: a bias update of another size.
    own = dict(rounded, b=np.array([3e-4, 0.0]))
    assert numbers_checks.compare_weights(initial, own, single) == (
        "FAIL: b differs by 2.0e-04, 2 of its tolerance (largest update 1.0e-01, 2 weights)")
    nan = dict(rounded, w=np.array([np.nan, -1.9]))
    assert numbers_checks.compare_weights(initial, nan, single).startswith(
        "FAIL: w differs by nan")
    assert numbers_checks.compare_weights(initial, initial, initial) == (
        "FAIL: no weight changed from the step-0 checkpoint")
    assert numbers_checks.compare_weights(initial, {"w": single["w"]}, single) == (
        "FAIL: the runs saved different variables: ['b']")


def test_seed_model_dir_makes_a_checkpoint_the_latest_of_another_directory(tmp_path):
    source = tmp_path / "a"
    source.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        (source / ("model.ckpt-0" + suffix)).write_text(suffix)
    (source / "model.ckpt-10.index").write_text("")
    (source / "model.ckpt-10.data-00000-of-00001").write_text("")
    assert numbers_checks.checkpoints(str(source)) == {
        0: str(source / "model.ckpt-0"), 10: str(source / "model.ckpt-10")}
    copy = numbers_checks.seed_model_dir(str(source / "model.ckpt-0"), str(tmp_path / "b"))
    assert copy == str(tmp_path / "b" / "model.ckpt-0")
    assert sorted(os.listdir(tmp_path / "b")) == [
        "checkpoint", "model.ckpt-0.data-00000-of-00001", "model.ckpt-0.index"]
    assert (tmp_path / "b" / "checkpoint").read_text().startswith(
        'model_checkpoint_path: "model.ckpt-0"\n')


def test_sum_arithmetic_is_read_in_the_optimizer_slots():
    """8 replicas fed the same examples: TF1 summed 8 equal gradients, so a first moment is 8x
    the 1-replica run's and a second moment 64x; replica 0's own gradient (the bug of issue
    31) or a mean leaves them 1x. A slot of rounding (a zero gradient's) is left out."""
    single = {"w": np.ones(3), "w/adam_m": np.array([0.1, -0.2, 1e-9]),
              "w/adam_v": np.array([1e-5, 4e-5, 0.0]), "b": np.zeros(1),
              "b/adam_m": np.array([0.3]), "b/adam_v": np.array([9e-5]),
              "key_bias": np.zeros(1), "key_bias/adam_m": np.array([1e-14]),
              "key_bias/adam_v": np.array([1e-29])}
    summed = {n: v * (64 if n.endswith("_v") else 8 if n.endswith("_m") else 1)
              for n, v in single.items()}
    summed["key_bias/adam_m"] = np.array([-3e-14])
    expected = {"adam_m": 8, "adam_v": 64}
    assert numbers_checks.compare_slots(summed, single, expected) == (
        "ok (slots: 2 adam_m 8x, 2 adam_v 64x)")
    assert numbers_checks.compare_slots(single, single, expected) == (
        "FAIL: adam_m slots are 1 x the 1-replica run's, not 8 x")
    uneven = dict(summed, **{"w/adam_m": np.array([0.8, -1.5, 0.0])})
    assert numbers_checks.compare_slots(uneven, single, expected) == (
        "FAIL: adam_m slots are 8, ? x the 1-replica run's, not 8 x")
    assert numbers_checks.compare_slots(summed, single, {"Momentum": 8}) == (
        "FAIL: no Momentum slots")


def test_numbers_checks_say_why_they_do_not_run():
    import dataclasses  # noqa: PLC0415
    import recipes  # noqa: PLC0415
    import run  # noqa: PLC0415  (the corpus runner: its modes dispatch to the checks)

    programs = recipes.by_name()
    assert run.MODES[-2:] == ("eval-recheck", "replica-check")
    unwritten = dataclasses.replace(programs["electra_pretraining"], eval_only=None,
                                    replica_check=None)
    for program, mode, status in (
            (programs["unet3d"], "replica-check", "n/a (batch norm over 2-core spatial "
             "partitions of each volume (input_partition_dims): no 1-core run of the check "
             "has them)"),
            (programs["grover_lm"], "eval-recheck", "n/a (lm/train.py only trains)"),
            (unwritten, "eval-recheck", "not run (no eval-only argv in the recipe)"),
            (unwritten, "replica-check", "not run (no deterministic run in the recipe)")):
        assert run.run_one(program, mode, "/nonexistent", "python", "/nonexistent",
                           1)[0] == status
    no_tpu = dataclasses.replace(programs["bert_pretraining"], has_use_tpu=False)
    assert run.run_one(no_tpu, "replica-check", "/nonexistent", "python", "/nonexistent",
                       1)[0] == "n/a (no TPU switch)"


def test_eval_only_argv_sets_flags_of_the_last_invocation():
    from recipes import program  # noqa: PLC0415

    assert program.with_flags(["--mode=train", "--model_dir=m", "--modes=x"], {
        "mode": "eval", "do_train": "false"}) == [
        "--model_dir=m", "--modes=x", "--mode=eval", "--do_train=false"]
    runs = program.evaluation_with(
        lambda work, use_tpu: ([["--mode=train", "--dir=" + work], ["--mode=eval"]], []),
        mode="eval", use_tpu=True)
    assert runs("w", False) == ["--mode=eval", "--use_tpu=True"]
    one = program.evaluation_with(lambda work, use_tpu: (["--do_train=true", "-x"], []),
                                  do_train="false")
    assert one("w", True) == ["-x", "--do_train=false"]


def test_a_mean_programs_named_slots_must_equal_the_1_replica_runs():
    """Every replica fed the same examples, a MEAN program's update is the 1-replica run's;
    a sum where TF1 took the mean multiplies the gradient by 8, which Adam's update
    (scale-invariant but for its epsilon) hides in the weights but not in its slots."""
    import dataclasses  # noqa: PLC0415
    import recipes  # noqa: PLC0415
    import run  # noqa: PLC0415

    initial = {"w": np.zeros(2), "w/AdamW": np.zeros(2), "w/AdamW_1": np.zeros(2)}
    single = {"w": np.array([0.01, -0.02]), "w/AdamW": np.array([0.1, -0.2]),
              "w/AdamW_1": np.array([1e-4, 4e-4])}
    summed = {"w": single["w"], "w/AdamW": 8 * single["w/AdamW"],
              "w/AdamW_1": 64 * single["w/AdamW_1"]}
    gpt2 = recipes.by_name()["gpt2_connorjl"]
    assert gpt2.gradients == "mean" and gpt2.slots == {"AdamW": 1, "AdamW_1": 2}
    assert run.replica_status(gpt2, initial, dict(single), single) == (
        "ok (w differs by 0.0e+00, 0 of its tolerance (largest update 2.0e-02, 1 weights); "
        "slots: 1 AdamW 1x, 1 AdamW_1 1x)")
    assert run.replica_status(gpt2, initial, summed, single) == (
        "FAIL: AdamW slots are 8 x the 1-replica run's, not 1 x")
    moved = dict(single, w=np.array([0.02, -0.02]))
    assert run.replica_status(gpt2, initial, moved, single).startswith(
        "FAIL: w differs by 1.0e-02")
    no_slots = dataclasses.replace(gpt2, slots=None)
    assert run.replica_status(no_slots, initial, summed, single).startswith("ok (w differs")
    grover = recipes.by_name()["grover_lm"]  # SUM: 8x, 64x
    assert run.replica_status(grover, initial, {
        "w": single["w"], "w/adafactor_v": 64 * single["w/AdamW_1"],
        "w/adafactor_vr": 64 * single["w/AdamW_1"], "w/adafactor_vc": 64 * single["w/AdamW_1"]},
        {"w": single["w"], "w/adafactor_v": single["w/AdamW_1"],
         "w/adafactor_vr": single["w/AdamW_1"], "w/adafactor_vc": single["w/AdamW_1"]}) == (
        "ok (slots: 1 adafactor_v 64x, 1 adafactor_vc 64x, 1 adafactor_vr 64x)")


def test_printed_results_are_read_with_the_step_of_the_last_checkpoint_named_before():
    """retinanet prints its COCO metrics (NumPy floats) from predict(), no "Saving dict"."""
    trained = (
        "I1128 Saving checkpoints for 2 into /w/model/model.ckpt.\n"
        "I1128 evaluation.py:89] Eval results: {'AP': np.float32(0.25), 'AP50': "
        "np.float32(-1.0), 'ARl': 1e-05}\n")
    fresh_text = ("I1128 Restoring parameters from /w/model/model.ckpt-2\n"
                  "I1128 retinanet_main.py:621] Eval results: {'AP': np.float32(0.25), "
                  "'AP50': np.float32(-1.0), 'ARl': 2e-05}\n")
    assert numbers_checks.printed_results(trained) == [
        (2, {"AP": 0.25, "AP50": -1.0, "ARl": 1e-05})]
    assert numbers_checks.printed_results("Eval results: {'AP': 0.5}") == [(-1, {"AP": 0.5})]
    assert numbers_checks.compare_evaluations(
        numbers_checks.printed_results(trained),
        numbers_checks.printed_results(fresh_text)) == (
        "FAIL: ARl = 1e-05 in-process, 2e-05 fresh (step 2)")
    assert numbers_checks.compare_evaluations(
        numbers_checks.printed_results(trained),
        numbers_checks.printed_results(fresh_text.replace("2e-05", "1e-05"))) == (
        "ok (step 2: 3 metric(s) equal, loss diff 0.0e+00)")
