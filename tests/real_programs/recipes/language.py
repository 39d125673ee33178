"""Language models: BERT-style fine-tuning and pre-training, GPT-2-style LMs."""
import glob
import json
import os
import subprocess
import sys

from tiny_data import (bert_config, masked_lm_examples, sentence, write_json, write_tfrecord,
                       write_vocab)
from recipes.program import Program, ckpt, evaluation_with, seeded_rng, tpu_flag


def bert_classifier(work, use_tpu):
    rng = seeded_rng()
    data, out = os.path.join(work, "glue"), os.path.join(work, "out")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab))
    os.makedirs(data, exist_ok=True)
    for split, count in (("train", 16), ("dev", 12)):
        with open(os.path.join(data, split + ".tsv"), "w") as f:
            f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
            for i in range(count):
                f.write("%d\t%d\t%d\t%s\t%s\n" % (rng.randint(2), i, i + 100,
                                                 sentence(rng, 5), sentence(rng, 4)))
    argv = ["--task_name=MRPC", "--do_train=true", "--do_eval=true", "--data_dir=" + data,
            "--vocab_file=" + os.path.join(work, "vocab.txt"),
            "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
            "--learning_rate=2e-5", "--num_train_epochs=1", "--output_dir=" + out,
            "--save_checkpoints_steps=1000"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 2), os.path.join(out, "eval_results.txt")]


def evaluation_only(prepare):
    """An eval-only argv for a BERT-style program: `prepare`'s with --do_train=false."""
    def eval_only(work, use_tpu):
        argv, _ = prepare(work, use_tpu)
        return [a for a in argv if not a.startswith("--do_train")] + ["--do_train=false"]
    return eval_only


def bert_pretraining(work, use_tpu):
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab))
    records = write_tfrecord(os.path.join(work, "data", "pretrain.tfrecord"),
                             masked_lm_examples(seeded_rng(), 32, 16, 3, vocab))
    out = os.path.join(work, "out")
    argv = ["--input_file=" + records, "--output_dir=" + out, "--do_train=true",
            "--do_eval=true", "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--train_batch_size=8", "--eval_batch_size=8", "--max_seq_length=16",
            "--max_predictions_per_seq=3", "--num_train_steps=3", "--num_warmup_steps=1",
            "--learning_rate=1e-4", "--iterations_per_loop=2", "--max_eval_steps=2",
            "--save_checkpoints_steps=1000"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 3), os.path.join(out, "eval_results.txt")]


def _pretraining_replicas(work, cores, config_file, extra_flags=(), **config):
    """One step without dropout, every example the same (see numbers_checks' docstring), of
    a BERT-style pre-training program reading `--<config_file>` (bert_config-style,
    `config` added); `extra_flags` go before the TPU flags."""
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    config_path = os.path.join(work, config_file + ".json")
    write_json(config_path, bert_config(
        vocab, **config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    records = write_tfrecord(os.path.join(work, "data", "pretrain.tfrecord"),
                             masked_lm_examples(seeded_rng(), 1, 16, 3, vocab) * 64)
    out = os.path.join(work, "out")
    return ["--input_file=" + records, "--output_dir=" + out, "--do_train=true",
            "--%s_file=%s" % (config_file, config_path),
            "--train_batch_size=64", "--max_seq_length=16", "--max_predictions_per_seq=3",
            "--num_train_steps=1", "--num_warmup_steps=0", "--learning_rate=1e-4",
            "--iterations_per_loop=1", "--save_checkpoints_steps=1000", *extra_flags,
            "--use_tpu=true", "--num_tpu_cores=%d" % cores], out


def bert_pretraining_replicas(work, cores):
    return _pretraining_replicas(work, cores, "bert_config")


def albert_pretraining(work, use_tpu):
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    config = bert_config(vocab, embedding_size=8, num_hidden_groups=1, inner_group_num=1,
                         down_scale_factor=1)
    write_json(os.path.join(work, "albert_config.json"), config)
    records = write_tfrecord(os.path.join(work, "data", "pretrain.tfrecord"),
                             masked_lm_examples(seeded_rng(), 32, 16, 3, vocab))
    out = os.path.join(work, "out")
    argv = ["--input_file=" + records, "--output_dir=" + out, "--do_train=true",
            "--do_eval=true", "--albert_config_file=" + os.path.join(work, "albert_config.json"),
            "--train_batch_size=8", "--eval_batch_size=8", "--max_seq_length=16",
            "--max_predictions_per_seq=3", "--num_train_steps=3", "--num_warmup_steps=1",
            "--learning_rate=1e-4", "--iterations_per_loop=2", "--max_eval_steps=2",
            "--save_checkpoints_steps=1000", "--optimizer=lamb"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 3), os.path.join(out, "eval_results.txt")]


def albert_pretraining_replicas(work, cores):
    """As bert_pretraining_replicas: one LAMB step."""
    return _pretraining_replicas(work, cores, "albert_config", ["--optimizer=lamb"],
                                 embedding_size=8, num_hidden_groups=1, inner_group_num=1,
                                 down_scale_factor=1)


def electra_pretraining(work, use_tpu):
    import json

    vocab = write_vocab(os.path.join(work, "data", "vocab.txt"))
    examples = masked_lm_examples(seeded_rng(), 32, 16, 3, vocab)
    write_tfrecord(os.path.join(work, "data", "pretrain_tfrecords", "pretrain_data.tfrecord-0"),
                   [{k: e[k] for k in ("input_ids", "input_mask", "segment_ids")}
                    for e in examples])
    hparams = {
        "debug": True, "do_train": True, "do_eval": False, "num_train_steps": 3,
        "num_eval_steps": 2, "iterations_per_loop": 2, "train_batch_size": 8,
        "eval_batch_size": 8, "max_seq_length": 16, "vocab_size": vocab,
        "embedding_size": 8, "num_warmup_steps": 1, "save_checkpoints_steps": 1000,
        "model_hparam_overrides": {"hidden_size": 16, "num_hidden_layers": 1,
                                   "num_attention_heads": 2, "intermediate_size": 32},
        "use_tpu": use_tpu, "num_tpu_cores": 8 if use_tpu else 1}
    argv = ["--data-dir", os.path.join(work, "data"), "--model-name", "tiny",
            "--hparams", json.dumps(hparams)]
    model_dir = os.path.join(work, "data", "models", "tiny")
    return argv, [ckpt(model_dir, 3)]


def _grover_inputs(work, examples, **config):
    """lm/train.py's config (bert_config-style JSON, `config` overriding) and records."""
    write_json(os.path.join(work, "grover.json"), dict({
        "vocab_size": 64, "hidden_size": 16, "attention_probs_dropout_prob": 0.1,
        "hidden_dropout_prob": 0.1, "hidden_act": "gelu", "initializer_range": 0.02,
        "intermediate_size": 32, "max_position_embeddings": 32, "num_attention_heads": 2,
        "num_hidden_layers": 1}, **config))
    records = write_tfrecord(os.path.join(work, "data", "train.tfrecord"),
                             [{"input_ids": ids} for ids in examples])
    return ["--config_file=" + os.path.join(work, "grover.json"), "--input_file=" + records,
            "--output_dir=" + os.path.join(work, "out"), "--max_seq_length=16",
            "--learning_rate=1e-4", "--save_checkpoints_steps=1000"]


def grover_lm(work, use_tpu):
    rng = seeded_rng()
    argv = _grover_inputs(work, [rng.randint(64, size=17) for _ in range(32)]) + [
        "--train_batch_size=8", "--num_train_steps=3", "--num_warmup_steps=1",
        "--iterations_per_loop=2"] + tpu_flag(use_tpu)
    return argv, [ckpt(os.path.join(work, "out"), 3)]


def grover_lm_replicas(work, cores):
    """One step without dropout, every example the same: its Adafactor-style optimizer's
    apply_gradients gets tf.gradients' gradients through CrossShardOptimizer (TF1: their sum
    over replicas, 8x the 1-replica run's here), unclipped; its second-moment slots
    (adafactor_v, and the factored adafactor_vr/_vc of matrices) then hold 64x."""
    argv = _grover_inputs(work, [seeded_rng().randint(64, size=17)] * 64,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return argv + ["--train_batch_size=64", "--num_train_steps=1", "--num_warmup_steps=0",
                   "--iterations_per_loop=1", "--use_tpu=true",
                   "--num_tpu_cores=%d" % cores], os.path.join(work, "out")


def _gpt2_inputs(work, text, **overrides):
    """main.py's inputs: the 93 openwebtext files inputs.openwebtext lists, of 26 texts
    (`text(rng, i)`: token ids) each, and its JSON parameters (`overrides` replacing them)."""
    rng = seeded_rng()
    data = os.path.join(work, "owt")
    for number in range(93):  # the file numbers inputs.openwebtext lists
        write_tfrecord(os.path.join(data, "openwebtext-newspaper_%d.tfrecords" % number),
                       [{"hash": [b"h%d" % i], "text": text(rng, i)}
                        for i in range(26)])  # eval: 13 files >= 42 (stitch) x 8 texts
    params = {
        "n_head": 2, "encoder_path": "unused", "n_vocab": 50257,  # 50256: its end-of-text id
        "embed_dropout": 0.1,
        # Its cosine schedule divides by max_steps - warmup_steps (0 gives a NaN rate).
        "lr": 0.00025, "warmup_steps": 0, "beta1": 0.9, "beta2": 0.98, "epsilon": 1e-9,
        "opt_name": "adam", "weight_decay": 0.01, "train_batch_size": 8, "attn_dropout": 0.1,
        "train_steps": 2, "eval_steps": 1, "max_steps": 1, "data_path": data,
        "res_dropout": 0.1, "predict_batch_size": 1, "eval_batch_size": 8, "iterations": 1,
        "n_embd": 16, "input": "openwebtext", "model": "GPT2",
        "model_path": os.path.join(work, "model"),
        "n_ctx": 16, "predict_path": "logs/predictions.txt", "n_layer": 1,
        "scale_by_depth": True, "scale_by_in": True}
    write_json(os.path.join(work, "tiny.json"), dict(params, **overrides))
    # Relative: main.py logs to logs/<--model>.log.
    return ["--model", "tiny.json"]


def gpt2_connorjl(work, use_tpu):
    argv = _gpt2_inputs(work, lambda rng, i: rng.randint(64, size=rng.randint(4, 9)))
    return argv + (["--tpu", "simulated"] if use_tpu else []), [
        ckpt(os.path.join(work, "model"), 2)]


def gpt2_connorjl_replicas(work, cores):  # pylint: disable=unused-argument  (TPUConfig's)
    """Two steps without dropout (its JSON's), every example the same: inputs.py reads its
    files through a sloppy parallel_interleave and crops each stitched text at a random
    offset, so the examples are only reproducible when every text is its end-of-text id
    50256 (any crop of any stitch then reads 50256s). main.py's TPUConfig sets no num_shards:
    the simulated TPU's cores are the replicas."""
    argv = _gpt2_inputs(work, lambda rng, i: [50256] * 6, embed_dropout=0.0,
                        attn_dropout=0.0, res_dropout=0.0)
    return argv + ["--tpu", "simulated"], os.path.join(work, "model")


def albert_zh_classifier(work, use_tpu):
    rng = seeded_rng()
    data, out = os.path.join(work, "lcqmc"), os.path.join(work, "out")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    config = bert_config(vocab, embedding_size=8, ln_type="postln")
    write_json(os.path.join(work, "albert_config_tiny.json"), config)
    os.makedirs(data, exist_ok=True)
    for split, count in (("train", 16), ("dev", 12)):
        with open(os.path.join(data, split + ".txt"), "w") as f:
            f.write("text_a\ttext_b\tlabel\n")
            for _ in range(count):
                f.write("%s\t%s\t%d\n" % (sentence(rng, 5), sentence(rng, 4), rng.randint(2)))
    argv = ["--task_name=lcqmc", "--do_train=true", "--do_eval=true", "--data_dir=" + data,
            "--vocab_file=" + os.path.join(work, "vocab.txt"),
            "--bert_config_file=" + os.path.join(work, "albert_config_tiny.json"),
            "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
            "--learning_rate=1e-4", "--num_train_epochs=1", "--output_dir=" + out,
            "--save_checkpoints_steps=1000"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 2), os.path.join(data, "eval_results_albert_zh.txt")]



def roberta_zh_classifier(work, use_tpu):
    """run_classifier.py's lcqmc_pair task: text_a, text_b, label lines after a header;
    train.txt, and test.txt for its dev set."""
    rng = seeded_rng()
    data, out = os.path.join(work, "lcqmc"), os.path.join(work, "out")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab))
    os.makedirs(data, exist_ok=True)
    for split, count in (("train", 16), ("test", 12)):
        with open(os.path.join(data, split + ".txt"), "w") as f:
            f.write("text_a\ttext_b\tlabel\n")
            for _ in range(count):
                f.write("%s\t%s\t%d\n" % (sentence(rng, 5), sentence(rng, 4), rng.randint(2)))
    argv = ["--task_name=lcqmc_pair", "--do_train=true", "--do_eval=true", "--data_dir=" + data,
            "--vocab_file=" + os.path.join(work, "vocab.txt"),
            "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
            "--learning_rate=1e-4", "--num_train_epochs=1", "--output_dir=" + out,
            "--save_checkpoints_steps=1000"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 2),
                  os.path.join(data, "eval_results16-layer24-4million-2.txt")]



def boolq(work, use_tpu):
    """run_bert_boolq.py's BoolQ JSON lines (passage, question, answer), BERT (google-research/
    bert as package `bert`) fine-tuned 2 steps, then the dev set evaluated."""
    rng = seeded_rng()
    data, out = os.path.join(work, "boolq"), os.path.join(work, "out")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab))
    os.makedirs(data, exist_ok=True)
    for split, count in (("train", 16), ("dev", 12)):
        with open(os.path.join(data, split + ".jsonl"), "w") as f:
            for _ in range(count):
                f.write(json.dumps({"passage": sentence(rng, 6), "question": sentence(rng, 3),
                                    "answer": bool(rng.randint(2))}) + "\n")
    argv = ["--do_train=true", "--do_eval_dev=true",
            "--boolq_train_data_path=" + os.path.join(data, "train.jsonl"),
            "--boolq_dev_data_path=" + os.path.join(data, "dev.jsonl"),
            "--vocab_file=" + os.path.join(work, "vocab.txt"),
            "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
            "--learning_rate=1e-4", "--num_train_epochs=1", "--output_dir=" + out,
            "--save_checkpoints_steps=1000"] + tpu_flag(use_tpu)
    return argv, [ckpt(out, 2), os.path.join(out, "dev_eval_results.txt")]


def _tapas_protos(work):
    """Compiles TAPAS's protos in place, as its README's install does (`protoc
    tapas/protos/*.proto --python_out=.`): its text utilities import interaction_pb2."""
    src = os.path.join(work, "src")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + src, "--python_out=" + src,
                    *sorted(glob.glob(os.path.join(src, "tapas", "protos", "*.proto")))],
                   check=True)


def _tapas_examples(path, rng, count, vocab, seq=16):
    """TAPAS classifier features (tf_example_utils' layout): a question segment, then table
    tokens with their column/row ids and cell-selection labels; uncompressed records (the
    program's `--compression_type=`); the examples themselves without a `path`."""
    examples = []
    for i, masked in enumerate(masked_lm_examples(rng, count, seq, 3, vocab)):
        table = masked["segment_ids"] == 1
        examples.append({
            "input_ids": masked["input_ids"], "input_mask": masked["input_mask"],
            "segment_ids": masked["segment_ids"],
            "column_ids": rng.randint(1, 4, seq) * table, "row_ids": rng.randint(1, 4, seq) * table,
            "label_ids": rng.randint(0, 2, seq) * table, "question_id": ["q%d-0_0" % i]})
    return write_tfrecord(path, examples) if path else examples


def _tapas_config(work):
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(
        vocab, type_vocab_size=[3, 8, 8, 2, 8, 8, 10]))
    return vocab


def _tapas_flags(work, out, train, dev):
    """The flags TAPAS's classifier and retriever share: 3 steps of 8 into `out`, 2 steps
    per loop and per evaluation."""
    return ["--input_file_train=" + train, "--input_file_eval=" + dev,
            "--compression_type=", "--model_dir=" + out,
            "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--train_batch_size=8", "--eval_batch_size=8", "--num_train_examples=24",
            "--max_seq_length=16", "--tpu_iterations_per_loop=2", "--num_eval_steps=2",
            "--learning_rate=1e-4", "--minutes_to_sleep_before_predictions=0"]


def tapas_classifier(work, use_tpu):
    """TAPAS's workflow (README): train with --use_tpu, evaluate without (its eval input
    keeps the string question ids a TPU cannot take, and its eval_metrics pass None for the
    heads left out: aggregation, classification). 3 steps of 8, then the evaluation of each
    checkpoint (iterate_checkpoints)."""
    _tapas_protos(work)
    records = _tapas_examples(os.path.join(work, "data", "train.tfrecord"), seeded_rng(), 24,
                              _tapas_config(work))
    out = os.path.join(work, "out")
    common = _tapas_flags(work, out, records, records)
    evaluation = common + ["--do_eval", "--use_tpu=false"]
    expected = [ckpt(out, 3), os.path.join(out, "eval_default-3.done")]
    if not use_tpu:
        return common + ["--do_train", "--do_eval", "--use_tpu=false"], expected
    return [common + ["--do_train", "--use_tpu=true", "--num_tpu_cores=8"], evaluation], expected


def tapas_classifier_eval_only(work, use_tpu):
    """The evaluation of the model directory under another --eval_name (the first one's
    marker files, eval_default-N.done, say its checkpoints were evaluated)."""
    argv, _ = tapas_classifier(work, use_tpu)
    evaluation = argv[-1] if use_tpu else argv
    return [a for a in evaluation if a != "--do_train"] + ["--eval_name=recheck"]


def _tapas_retrieval_examples(path, rng, count, vocab, seq=16):
    """Table retrieval pairs (a question's tokens beside a table's) with their ids."""
    tables = _tapas_examples(None, rng, count, vocab, seq)
    questions = masked_lm_examples(rng, count, seq, 3, vocab)
    return write_tfrecord(path, [
        {**{k: v for k, v in table.items() if k != "label_ids"},
         "question_input_ids": question["input_ids"],
         "question_input_mask": question["input_mask"], "table_id_hash": [i],
         "question_hash": [1000 + i], "table_id": ["t%d" % i]}
        for i, (table, question) in enumerate(zip(tables, questions))])


def tapas_retriever(work, use_tpu):
    """The dual encoder (DTR), as tapas_classifier: 3 steps of 8, then its evaluation and
    predictions (recall@k over >= 100 tables: its metric takes the top 100) of each
    checkpoint, on CPU."""
    _tapas_protos(work)
    vocab = _tapas_config(work)
    rng = seeded_rng()
    train = _tapas_retrieval_examples(os.path.join(work, "data", "train.tfrecord"), rng, 24,
                                      vocab)
    dev = _tapas_retrieval_examples(os.path.join(work, "data", "dev.tfrecord"), rng, 104, vocab)
    out = os.path.join(work, "out")
    common = _tapas_flags(work, out, train, dev) + ["--predict_batch_size=8",
                                                    "--max_query_length=16"]
    evaluation = common + ["--do_eval", "--do_predict", "--use_tpu=false"]
    expected = [ckpt(out, 3), os.path.join(out, "eval_default-3.done"),
                os.path.join(out, "eval_results_3.tsv")]
    if not use_tpu:
        return common + ["--do_train", "--do_eval", "--do_predict", "--use_tpu=false"], expected
    return [common + ["--do_train", "--use_tpu=true", "--num_tpu_cores=8"], evaluation], expected


def tapas_retriever_eval_only(work, use_tpu):
    argv, _ = tapas_retriever(work, use_tpu)
    evaluation = argv[-1] if use_tpu else argv
    return [a for a in evaluation if a not in ("--do_train", "--do_predict")] + [
        "--eval_name=recheck"]


PROGRAMS = [
    Program("tapas_retriever", "google-research/tapas",
            "569a3c31451d941165bd10783f73f494406b3906", "google-research+tapas",
            "tapas/experiments/table_retriever_experiment.py",
            "TAPAS dense table retrieval (DTR): dual BERT encoders of questions and tables, "
            "in-batch softmax, eval_metrics, predictions written per checkpoint, train on TPU "
            "then evaluate and predict on CPU", tapas_retriever,
            eval_only=tapas_retriever_eval_only,
            replica_check="in-batch negatives: table_retriever_model.py's softmax runs over "
            "each replica's own batch (without --use_out_of_core_negatives), a 1-replica "
            "run's over the global batch", gradients="sum"),
    Program("tapas_classifier", "google-research/tapas",
            "569a3c31451d941165bd10783f73f494406b3906", "google-research+tapas",
            "tapas/experiments/tapas_classifier_experiment.py",
            "TAPAS table QA (BERT-derived): cell selection over segmented tensors (column/row "
            "ids, 7 token type embeddings), tensorflow_probability, tf_slim, absl flags "
            "spread over modules, train on TPU then evaluate on CPU with a features-only "
            "input_fn and None among eval_metrics' arguments, checkpoint-iterating evaluation",
            tapas_classifier, eval_only=tapas_classifier_eval_only,
            replica_check="dropout without a flag: tapas_classifier_model.py's "
            "keep_prob=0.9 on the output layer in training (its config overrides reach "
            "only BERT's dropout)", gradients="sum"),
    Program("bert_classifier", "google-research/bert",
            "eedf5716ce1268e56f0a50264a88cafad334ac61", "google-research+bert",
            "run_classifier.py", "BERT fine-tuning (MRPC TSV), tf.contrib layer_norm, "
            "AdamWeightDecay, eval_metrics, TPU eval padding", bert_classifier,
            eval_only=evaluation_only(bert_classifier),
            replica_check="dropout without a flag: run_classifier.py's keep_prob=0.9",
            gradients="sum"),
    Program("bert_pretraining", "google-research/bert",
            "eedf5716ce1268e56f0a50264a88cafad334ac61", "google-research+bert",
            "run_pretraining.py", "BERT masked-LM + NSP pre-training, gather over masked "
            "positions, scaffold_fn init, eval_metrics", bert_pretraining,
            eval_only=evaluation_only(bert_pretraining), replica_check=bert_pretraining_replicas,
            gradients="sum", slots={"adam_m": 1, "adam_v": 2}),
    Program("albert_pretraining", "google-research/albert",
            "b772393d3dae115b493258ce8e37c17b2cc62100", "google-research+albert",
            "albert/run_pretraining.py", "ALBERT pre-training (SOP), LAMB optimizer, "
            "shared layers, tf.compat.v1 + contrib imports", albert_pretraining,
            copy_to="albert", eval_only=evaluation_only(albert_pretraining),
            replica_check=albert_pretraining_replicas, gradients="sum",
            slots={"adam_m": 1, "adam_v": 2}),
    Program("electra_pretraining", "google-research/electra",
            "8a46635f32083ada044d7e9ad09604742600ee7b", "google-research+electra",
            "run_pretraining.py", "ELECTRA generator/discriminator pre-training, "
            "sampling, argparse + JSON hparams", electra_pretraining,
            eval_only="run_pretraining.py trains or evaluates, never both in one process "
            "(train_or_eval: exactly one of do_train, do_eval)",
            replica_check="random without a flag: pretrain/pretrain_helpers.py's mask() draws the "
            "masked positions and sample_from_softmax() the generator's replacements per "
            "replica", gradients="sum"),
    Program("grover_lm", "rowanz/grover", "f59a206a8722357c351eae9e937b9f7a53bfda61",
            "rowanz+grover", "lm/train.py", "GPT-2-style LM (Grover) pre-training, Adafactor-"
            "style custom optimizer, tf.contrib.tpu", grover_lm,
            eval_only="lm/train.py only trains", replica_check=grover_lm_replicas,
            gradients="sum",
            slots={"adafactor_v": 2, "adafactor_vr": 2, "adafactor_vc": 2}),
    Program("gpt2_connorjl", "ConnorJL/GPT2", "936fe2a21fad221cb07d0157c00fbb0780c7d114",
            "ConnorJL+GPT2", "main.py", "GPT-2 LM training loop (train/evaluate/"
            "get_variable_value), plain Estimator on CPU, TPUEstimator with --tpu",
            gpt2_connorjl, has_use_tpu=True,
            eval_only="main.py trains train_steps more steps (train(steps=)) before each "
            "evaluation: no evaluation without training",
            replica_check=gpt2_connorjl_replicas, slots={"AdamW": 1, "AdamW_1": 2}),
    Program("albert_zh_classifier", "brightmart/albert_zh",
            "52149e82faf3eddd02f31dc2942a4d06bc78c247", "brightmart+albert_zh",
            "run_classifier.py", "albert_zh sentence-pair fine-tuning (LCQMC format), "
            "factorized embeddings, `import tensorflow as tf` 1.x style",
            albert_zh_classifier, eval_only=evaluation_only(albert_zh_classifier),
            replica_check="dropout without a flag: run_classifier.py's keep_prob=0.9",
            gradients="sum"),
    Program("gpt2_ml", "imcaspar/gpt2-ml", "f6286b16cbbee6dddbe1ba557fffb47eaf998cd1",
            "imcaspar+gpt2-ml", "train/train_tpu.py",
            "GPT2-ML (Chinese GPT-2, Grover's training code as `import tensorflow.compat.v1 as "
            "tf` in package `train`): LM pre-training, Adafactor-style optimizer subclassing "
            "tf.compat.v1.train.Optimizer, TPUEstimator", grover_lm,
            eval_only="train/train_tpu.py only trains", replica_check=grover_lm_replicas,
            gradients="sum",
            slots={"adafactor_v": 2, "adafactor_vr": 2, "adafactor_vc": 2}),
    Program("roberta_zh_classifier", "brightmart/roberta_zh",
            "438476f7da1661faf45e5b8da9f55df403e44997", "brightmart+roberta_zh",
            "run_classifier.py", "RoBERTa-zh sentence-pair fine-tuning (LCQMC format, its "
            "lcqmc_pair processor): BERT's modeling with its own optimization_finetuning.py, "
            "eval results written beside the data", roberta_zh_classifier,
            eval_only=evaluation_only(roberta_zh_classifier),
            replica_check="dropout without a flag: run_classifier.py's keep_prob=0.9",
            gradients="sum"),
    Program("boolq", "google-research/language", "865fae65f63ef7e6b2989d4ff8b47f61750415a8",
            "google-research+language", "run_bert_boolq.py",
            "BoolQ yes/no QA (language/boolq): BERT (google-research/bert at eedf5716ce12 as "
            "package `bert`) from tensorflow.compat.v1 + tensorflow.contrib.tpu / "
            "cluster_resolver imports, JSON-lines data, dev evaluation",
            boolq, copy_from="language/boolq",
            with_snapshots=(("google-research+bert", ".", "bert"),),
            eval_only=evaluation_with(boolq, do_train="false"),
            replica_check="dropout without a flag: run_bert_boolq.py's keep_prob=0.9",
            gradients="sum"),
]
