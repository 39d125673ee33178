"""Text models beyond BERT's fine-tuning: XLNet (classification, multiple choice), LaserTagger
(BERT encoder + tagging, SavedModel export), BERT-NER (token classification)."""
import json
import os

from tiny_data import (WORDS, bert_config, sentence, write_json, write_tfrecord,
                       write_vocab)
from recipes.program import Program, evaluation_with, seeded_rng, tpu_flag


def train_sentencepiece(path_prefix, texts, vocab_size=48):
    """A tiny SentencePiece model trained on `texts`, with XLNet's special symbols at ids 1-8
    (<unk> is 0): `<path_prefix>.model`."""
    import sentencepiece as spm

    corpus = path_prefix + ".corpus.txt"
    with open(corpus, "w") as f:
        f.write("\n".join(texts) + "\n")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=path_prefix, vocab_size=vocab_size, model_type="unigram",
        hard_vocab_limit=False, bos_id=-1, eos_id=-1, unk_id=0,
        control_symbols="<s>,</s>,<cls>,<sep>,<pad>,<mask>,<eod>,<eop>",
        minloglevel=2)
    return path_prefix + ".model"


def write_xlnet_config(work):
    write_json(os.path.join(work, "xlnet_config.json"), {
        "n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8, "d_inner": 32,
        "ff_activation": "gelu", "untie_r": True, "n_token": 64})


def xlnet_tpu_flags(use_tpu):
    # One core per host on CPU: more makes XLNet build a MirroredStrategy over GPUs.
    return ["--num_core_per_host=%d" % (8 if use_tpu else 1)] + tpu_flag(use_tpu)


def xlnet_classifier(work, use_tpu):
    rng = seeded_rng()
    data = os.path.join(work, "aclImdb")
    texts = []
    for split, count in (("train", 8), ("test", 6)):  # per label
        for label in ("neg", "pos"):
            os.makedirs(os.path.join(data, split, label))
            for i in range(count):
                text = sentence(rng, 6 + i % 4)
                texts.append(text)
                with open(os.path.join(data, split, label, "%d_1.txt" % i), "w") as f:
                    f.write(text + "<br />" + sentence(rng, 3))
    train_sentencepiece(os.path.join(work, "spiece"), texts + [" ".join(WORDS)] * 4)
    write_xlnet_config(work)
    return xlnet_classifier_argv(work, use_tpu)


def xlnet_classifier_argv(work, use_tpu):
    """xlnet_classifier's argv and expected files, for data it wrote into `work`."""
    data, model_dir = os.path.join(work, "aclImdb"), os.path.join(work, "model")
    out, predict = os.path.join(work, "out"), os.path.join(work, "predict")
    argv = ["--task_name=imdb", "--do_train=true", "--do_eval=true", "--do_predict=true",
            "--data_dir=" + data, "--output_dir=" + out, "--model_dir=" + model_dir,
            "--predict_dir=" + predict, "--spiece_model_file=" + os.path.join(
                work, "spiece.model"),
            "--model_config_path=" + os.path.join(work, "xlnet_config.json"),
            "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
            "--predict_batch_size=8", "--train_steps=2", "--warmup_steps=1",
            "--learning_rate=1e-4", "--iterations=1", "--save_steps=2",
            ] + xlnet_tpu_flags(use_tpu)
    return argv, [os.path.join(model_dir, "model.ckpt-2.index"),
                  os.path.join(predict, "imdb.tsv"), os.path.join(predict, "imdb.logits.json")]


def xlnet_classifier_eval(work, use_tpu):
    argv, _ = xlnet_classifier_argv(work, use_tpu)
    return [a for a in argv if not a.startswith(("--do_train", "--do_predict"))] + [
        "--do_train=false", "--do_predict=false"]


def xlnet_classifier_replicas(work, cores):
    """Two steps without dropout or clipping, each on all 16 training examples (the global
    batch's examples do not depend on the program's unseeded NumPy shuffle)."""
    argv, _ = xlnet_classifier(work, True)
    model_dir = os.path.join(work, "model")
    drop = ("--do_eval", "--do_predict", "--train_batch_size", "--num_core_per_host")
    return [a for a in argv if not a.startswith(drop)] + [
        "--do_eval=false", "--do_predict=false", "--train_batch_size=16", "--dropout=0",
        "--dropatt=0", "--clip=1e9", "--shuffle_buffer=1",
        "--num_core_per_host=%d" % cores], model_dir


def xlnet_race(work, use_tpu):
    rng = seeded_rng()
    data = os.path.join(work, "RACE")
    texts = []
    for split, count in (("train", 4), ("dev", 2)):  # files per level, two questions each
        for level in ("middle", "high"):
            os.makedirs(os.path.join(data, split, level))
            for i in range(count):
                article = ". ".join(sentence(rng, 5) for _ in range(3))
                questions = [sentence(rng, 3) + " _ .", sentence(rng, 4) + " ?"]
                options = [[sentence(rng, 2) for _ in range(4)] for _ in questions]
                texts += [article] + questions + sum(options, [])
                with open(os.path.join(data, split, level, "%d.txt" % i), "w") as f:
                    json.dump({"article": article, "questions": questions, "options": options,
                               "answers": ["ABCD"[rng.randint(4)] for _ in questions]}, f)
    train_sentencepiece(os.path.join(work, "spiece"), texts + [" ".join(WORDS)] * 4)
    write_xlnet_config(work)
    return xlnet_race_argv(work, use_tpu)


def xlnet_race_argv(work, use_tpu):
    """xlnet_race's argv and expected files, for data it wrote into `work`."""
    data, model_dir = os.path.join(work, "RACE"), os.path.join(work, "model")
    argv = ["--do_train=true", "--do_eval=true", "--eval_split=dev", "--data_dir=" + data,
            "--output_dir=" + os.path.join(work, "out"), "--model_dir=" + model_dir,
            "--spiece_model_file=" + os.path.join(work, "spiece.model"),
            "--model_config_path=" + os.path.join(work, "xlnet_config.json"),
            "--max_seq_length=24", "--max_qa_length=8", "--train_batch_size=8",
            "--eval_batch_size=8", "--train_steps=2", "--warmup_steps=1",
            "--learning_rate=1e-4", "--iterations=1", "--save_steps=2"] + xlnet_tpu_flags(use_tpu)
    return argv, [os.path.join(model_dir, "model.ckpt-2.index"),
                  os.path.join(model_dir, "eval", "events.out.tfevents.*")]


def xlnet_race_replicas(work, cores):
    """As xlnet_classifier_replicas: two steps on all 16 training questions."""
    argv, _ = xlnet_race(work, True)
    drop = ("--do_eval", "--train_batch_size", "--num_core_per_host")
    return [a for a in argv if not a.startswith(drop)] + [
        "--do_eval=false", "--train_batch_size=16", "--dropout=0", "--dropatt=0",
        "--clip=1e9", "--shuffle_buffer=1", "--num_core_per_host=%d" % cores], os.path.join(
            work, "model")


def lasertagger(work, use_tpu):
    rng = seeded_rng()
    seq, vocab, tags = 16, 32, ["KEEP", "DELETE", "KEEP|and", "DELETE|and"]
    with open(os.path.join(work, "label_map.txt"), "w") as f:
        f.write("\n".join(tags) + "\n")
    config = dict(bert_config(vocab), use_t2t_decoder=True, decoder_num_hidden_layers=1,
                  decoder_hidden_size=16, decoder_num_attention_heads=2,
                  decoder_filter_size=32, use_full_attention=False)
    write_json(os.path.join(work, "lasertagger_config.json"), config)

    def examples(count):
        for _ in range(count):
            length = rng.randint(6, seq + 1)
            mask = [1] * length + [0] * (seq - length)
            yield {"input_ids": [int(rng.randint(5, vocab)) if m else 0 for m in mask],
                   "input_mask": mask, "segment_ids": [0] * seq,
                   "labels": [int(rng.randint(len(tags))) if m else 0 for m in mask],
                   "labels_mask": mask}

    train = write_tfrecord(os.path.join(work, "data", "train.tf_record"), list(examples(32)))
    dev = write_tfrecord(os.path.join(work, "data", "dev.tf_record"), list(examples(16)))
    out, export = os.path.join(work, "models"), os.path.join(work, "export")
    argv = ["--training_file=" + train, "--eval_file=" + dev,
            "--label_map_file=" + os.path.join(work, "label_map.txt"),
            "--model_config_file=" + os.path.join(work, "lasertagger_config.json"),
            "--output_dir=" + out, "--export_path=" + export, "--do_train=true",
            # its TPU model (one-hot embedding matmuls) needs static shapes: it exports
            # on CPU (run_wikisplit_experiment.sh: a run without --use_tpu)
            "--do_eval=true", "--do_export=%s" % (not use_tpu), "--max_seq_length=%d" % seq,
            "--train_batch_size=8", "--eval_batch_size=8", "--num_train_examples=16",
            "--num_eval_examples=16", "--num_train_epochs=1", "--learning_rate=1e-4",
            "--save_checkpoints_steps=1000", "--iterations_per_loop=1",
            "--eval_timeout=1"] + tpu_flag(use_tpu)
    return argv, [os.path.join(out, "model.ckpt-2.index"),
                  os.path.join(out, "eval", "events.out.tfevents.*")] + (
                      [] if use_tpu else [os.path.join(export, "*", "saved_model.pb")])


NER_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]


def _bert_ner_inputs(work, rng, sentences, **config):
    """BERT_NER.py's inputs: CoNLL-2003 files of `sentences` ({split: [[(word, tag)]]}), a
    vocabulary, a BERT config (`config` overriding bert_config's) and the --init_checkpoint its
    model_fn needs (a name-based checkpoint of the word embeddings)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    os.makedirs(os.path.join(work, "middle"), exist_ok=True)
    # the program writes its TFRecords there before TPUEstimator makes it
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    for split, split_sentences in sentences.items():
        with open(os.path.join(data, split + ".txt"), "w") as f:
            for words in split_sentences:  # word POS chunk tag; a sentence ends with "."
                for word, tag in words:
                    f.write("%s NN I-NP %s\n" % (word, tag))
                f.write(". . O O\n\n")
    vocab = write_vocab(os.path.join(work, "vocab.txt"))
    write_json(os.path.join(work, "bert_config.json"), bert_config(vocab, **config))
    import tensorflow as tf  # real TensorFlow, eagerly, to write the checkpoint

    init = os.path.join(work, "init", "bert_model.ckpt")
    tf.raw_ops.SaveV2(prefix=init, tensor_names=["bert/embeddings/word_embeddings"],
                      shape_and_slices=[""], tensors=[rng.rand(vocab, 16).astype("float32")])
    return ["--task_name=ner", "--do_train=true", "--data_dir=" + data,
            "--vocab_file=" + os.path.join(work, "vocab.txt"),
            "--bert_config_file=" + os.path.join(work, "bert_config.json"),
            "--output_dir=" + os.path.join(work, "out"),
            "--middle_output=" + os.path.join(work, "middle"), "--init_checkpoint=" + init,
            "--max_seq_length=16", "--learning_rate=1e-4", "--num_train_epochs=1",
            "--save_checkpoints_steps=1000", "--iterations_per_loop=1", "--crf=true"]


def _ner_sentence(rng):
    return [(word, NER_TAGS[rng.randint(len(NER_TAGS))])
            for word in sentence(rng, rng.randint(3, 10)).split()]


def bert_ner(work, use_tpu):
    rng = seeded_rng()
    sentences = {split: [_ner_sentence(rng) for _ in range(count)]
                 for split, count in (("train", 16), ("dev", 12), ("test", 10))}
    # No --do_eval: its metric_fn counts argmax predictions over num_labels classes in a
    # confusion matrix of num_labels - 1 classes, whose bounds assertion fails as soon as
    # the tiny untrained model predicts the last label (TF1's confusion_matrix asserts the
    # same). Its Python int `num_labels` among the eval_metrics reaches metric_fn with
    # use_tpu=False, as in the original (tests/test_host_fn_constants.py).
    # No --do_predict: its prediction is flattened to batch x sequence rows, which the
    # simulated path cannot strip of a padded last batch's rows (see the report/README).
    argv = _bert_ner_inputs(work, rng, sentences) + [
        "--train_batch_size=8", "--eval_batch_size=8", "--predict_batch_size=8"]
    return argv + tpu_flag(use_tpu), [os.path.join(work, "out", "model.ckpt-2.index")]


def bert_ner_replicas(work, cores):
    """One step without dropout (its config's; BERT_NER.py adds none), every example the
    same sentence (see numbers_checks' docstring: BERT's optimization.py clips each replica's
    gradient before the sum)."""
    rng = seeded_rng()
    argv = _bert_ner_inputs(work, rng, {"train": [_ner_sentence(rng)] * 64},
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    # 64 examples, one epoch of a global batch of 64: one step, no warmup (10% of 1 step)
    return argv + ["--train_batch_size=64", "--use_tpu=true",
                   "--num_tpu_cores=%d" % cores], os.path.join(work, "out")


XLNET_FILES = ("classifier_utils.py", "data_utils.py", "function_builder.py",
               "model_utils.py", "modeling.py", "prepro_utils.py", "xlnet.py")

PROGRAMS = [
    Program("xlnet_classifier", "zihangdai/xlnet", "bbaa3a6fa0b3a2ee694e8cf66167434f9eca9660",
            "zihangdai+xlnet", "run_classifier.py", "XLNet fine-tuning (IMDB folders, "
            "SentencePiece): two-stream relative attention, plain Estimator on CPU and "
            "TPUEstimator with use_tpu, host_call scalars, eval over listed checkpoints, predict",
            xlnet_classifier, check_paths=("run_classifier.py",) + XLNET_FILES,
            eval_only=xlnet_classifier_eval, replica_check=xlnet_classifier_replicas),
    Program("xlnet_race", "zihangdai/xlnet", "bbaa3a6fa0b3a2ee694e8cf66167434f9eca9660",
            "zihangdai+xlnet", "run_race.py", "XLNet multiple-choice reading comprehension "
            "(RACE JSON): four encodings per example reshaped into one batch, eval_metrics",
            xlnet_race, check_paths=("run_race.py",) + XLNET_FILES,
            eval_only=lambda work, use_tpu: [
                a for a in xlnet_race_argv(work, use_tpu)[0]
                if not a.startswith("--do_train")] + ["--do_train=false"],
            replica_check=xlnet_race_replicas),
    Program("lasertagger", "google-research/lasertagger",
            "0bfa546e755814b28163dad039ab6d9f53f82bb8", "google-research+lasertagger",
            "run_lasertagger.py", "LaserTagger: BERT encoder (google-research/bert at "
            "eedf5716ce12 as package `bert`) + Transformer tag decoder, eval over "
            "checkpoints_iterator, export_saved_model", lasertagger,
            with_snapshots=(("google-research+bert", ".", "bert"),),
            check_paths=("run_lasertagger.py", "run_lasertagger_utils.py",
                         "transformer_decoder.py", "utils.py", "official_transformer"),
            # its checkpoints_iterator evaluates the latest checkpoint (--eval_timeout=1)
            eval_only=evaluation_with(lasertagger, do_train="false"),
            replica_check="dropout without a flag: official_transformer/model_params.py's "
            "BASE_PARAMS (0.1, the tag decoder's) or run_lasertagger_utils.py's keep_prob=0.9 "
            "(without it)", gradients="sum"),
    Program("bert_ner", "kyzhouhzau/BERT-NER", "0f77e478872453df51cd3c65d1a39b12d9617f9d",
            "kyzhouhzau+BERT-NER", "BERT_NER.py", "BERT token classification (CoNLL-2003 "
            "text) with a tf.contrib.crf head (log likelihood loss, crf_decode): "
            "init_from_checkpoint (scaffold_fn on TPU), training (google-research/bert "
            "at eedf5716ce12 in its `bert` submodule)", bert_ner,
            with_snapshots=(("google-research+bert", ".", "bert"),),
            check_paths=("BERT_NER.py", "metrics.py"),
            eval_only="BERT_NER.py's metric_fn: argmax over num_labels classes into a "
            "confusion matrix of num_labels - 1, whose bounds assertion fails once the model "
            "predicts the last label ([SEP], every sentence's last token), in TF1 too",
            replica_check=bert_ner_replicas, gradients="sum",
            slots={"adam_m": 1, "adam_v": 2}),
]
