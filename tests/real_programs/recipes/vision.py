"""Image models: classifiers, semi-supervised and contrastive training, a VAE."""
import os

import numpy as np

from tiny_data import mnist_records, tfds_cifar10, write_tfrecord
from recipes.program import Program, ckpt, evaluation_with, seeded_rng, tpu_flag


def mnist_tpu(work, use_tpu):
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "mnist"), os.path.join(work, "model")
    for split, count in (("train", 64), ("validation", 32), ("test", 16)):
        write_tfrecord(os.path.join(data, split + ".tfrecords"), mnist_records(rng, count))
    argv = ["--data_dir=" + data, "--model_dir=" + model_dir, "--batch_size=16",
            "--train_steps=4", "--eval_steps=2", "--iterations=2", "--num_shards=8",
            "--enable_predict=true"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 4)]


def resnet_main(work, use_tpu):
    model_dir = os.path.join(work, "model")
    argv = ["--data_dir=", "--model_dir=" + model_dir, "--resnet_depth=18",
            "--image_size=32", "--train_batch_size=8", "--eval_batch_size=8",
            "--train_steps=2", "--iterations_per_loop=1", "--num_train_images=16",
            "--num_eval_images=8", "--num_label_classes=10", "--mode=train_and_eval",
            "--steps_per_eval=2", "--precision=float32", "--transpose_input=false",
            "--num_parallel_calls=1", "--num_cores=%d" % (8 if use_tpu else 1),
            "--use_cache=false"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 2)]


def uda_image(work, use_tpu):
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "cifar10"), os.path.join(work, "model")

    def image():
        return rng.rand(32 * 32 * 3).astype(np.float32)

    write_tfrecord(os.path.join(data, "train-size_16.tfrecord"),
                   [{"image": image(), "label": [int(rng.randint(10))]} for _ in range(16)])
    write_tfrecord(os.path.join(data, "test.tfrecord"),
                   [{"image": image(), "label": [int(rng.randint(10))]} for _ in range(16)])
    write_tfrecord(os.path.join(data, "unsup-0.tfrecord"),
                   [{"ori_image": image(), "aug_image": image()} for _ in range(16)])
    # wrn_size 16, not less: narrower, its 1x1 stride-2 shortcut convolutions have fewer than
    # 16 input channels, whose filter gradient oneDNN computes past a buffer's end (a native
    # crash in plain TensorFlow: onednn_1x1_crash.py).
    argv = ["--do_train=true", "--do_eval=true", "--task_name=cifar10", "--sup_size=16",
            "--aug_copy=1", "--unsup_ratio=1", "--train_batch_size=8", "--eval_batch_size=8",
            "--data_dir=" + data, "--model_dir=" + model_dir, "--train_steps=2",
            "--iterations=1", "--save_steps=2", "--wrn_size=16", "--uda_confidence_thresh=0.8",
            "--uda_softmax_temp=0.4", "--tsa=linear_schedule"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 2)]


def simclr(work, use_tpu):
    data, model_dir = os.path.join(work, "tfds"), os.path.join(work, "model")
    tfds_cifar10(data, seeded_rng())
    argv = ["--dataset=cifar10", "--data_dir=" + data, "--model_dir=" + model_dir,
            "--train_mode=pretrain", "--mode=train_then_eval", "--eval_split=test",
            # eval: 8 examples per replica on 8 cores, for its top-5 contrastive accuracy
            "--train_batch_size=8", "--eval_batch_size=64", "--train_steps=2",
            "--checkpoint_steps=2", "--image_size=32", "--resnet_depth=18",
            "--width_multiplier=1", "--proj_out_dim=8", "--use_blur=false",
            "--learning_rate=0.1", "--weight_decay=0", "--temperature=0.5"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 2), os.path.join(model_dir, "result.json"),
                  os.path.join(model_dir, "hub", "2", "tfhub_module.pb")]


def disentanglement_vae(work, use_tpu):
    out = os.path.join(work, "out")
    gin = os.path.join(work, "train.gin")
    with open(gin, "w") as f:
        f.write("\n".join([
            'dataset.name = "dummy_data"', "model.batch_size = 8", "model.model = @vae()",
            "vae.beta = 4.", "vae_optimizer.optimizer_fn = @AdamOptimizer",
            "model.training_steps = 3", "model.eval_steps = 2", "model.random_seed = 0",
            "AdamOptimizer.learning_rate = 0.001", "encoder.num_latent = 4",
            "encoder.encoder_fn = @conv_encoder", "decoder.decoder_fn = @deconv_decoder",
            "reconstruction_loss.loss_fn = @bernoulli_loss", ""]))
    argv = ["--model_dir=" + out, "--gin_config=" + gin]
    return argv, [ckpt(os.path.join(out, "tf_checkpoint"), 3),
                  os.path.join(out, "tfhub", "saved_model.pb"),
                  os.path.join(out, "results", "json", "train_results.json")]


PROGRAMS = [
    Program("mnist_tpu", "tensorflow/tpu", "7dc921f846c9e4071f3884b768a7ddf521272a49",
            "tensorflow+tpu", "mnist_tpu.py", "Cloud TPU MNIST: train, evaluate, predict, "
            "tf.compat.v1 + tf_estimator imports", mnist_tpu,
            copy_from="models/official/mnist",
            # Its own argv again: train() skips to the checkpoint at --train_steps, evaluates.
            eval_only=lambda work, use_tpu: mnist_tpu(work, use_tpu)[0] + [
                "--enable_predict=false"],
            replica_check="dropout without a flag: mnist_tpu.py's Dropout(0.4)"),
    Program("resnet_main", "tensorflow/tpu", "7dc921f846c9e4071f3884b768a7ddf521272a49",
            "tensorflow+tpu", "models/official/resnet/resnet_main.py",
            "ResNet-18 on null input, train_and_eval, host_call summaries, batch norm, "
            "tf2 summary in host_call", resnet_main, copy_from="models", copy_to="models",
            pythonpath=("models",), check_paths=("models/official/resnet", "models/common",
                                                 "models/hyperparameters"),
            # --mode=eval: its checkpoints_iterator evaluates the last checkpoint, then stops
            # (step >= --train_steps).
            eval_only=evaluation_with(resnet_main, mode="eval"),
            replica_check="batch norm; identical examples (its null input) do not make a "
            "1-replica run TF1's: moving variances take n/(n-1) of each replica's count, and "
            "one constant image leaves the batch norms too little variance (rounding: the "
            "first kernel 58x the tolerance apart, measured)"),
    Program("uda_image", "google-research/uda", "960684e363251772a5938451d4d2bc0f1da9e24b",
            "google-research+uda", "main.py", "UDA semi-supervised WRN on CIFAR-format "
            "records: EMA (moving averages), two inputs per step, TSA", uda_image,
            copy_from="image", eval_only=evaluation_with(uda_image, do_train="false"),
            replica_check="batch norm, and no two training examples alike: data.py "
            "flips and crops each image at random"),
    Program("simclr", "google-research/simclr", "383d4143fd8cf7879ae10f1046a9baeb753ff438",
            "google-research+simclr", "run.py", "SimCLR contrastive pre-training (TF1 code) on "
            "a TFDS builder, LARS, cross-replica batch norm, train_then_eval + hub export",
            simclr, check_paths=("data.py", "data_util.py", "lars_optimizer.py", "model.py",
                                 "model_util.py", "objective.py", "resnet.py", "run.py"),
            tf1_libraries=("tensorflow_hub",),
            # its checkpoints_iterator evaluates the last checkpoint, then stops
            # (global_step >= train_steps)
            eval_only=evaluation_with(simclr, mode="eval"),
            replica_check="random without a flag: data_util.py's preprocess_for_train crops "
            "and flips every image at random (random_crop_with_resize, "
            "random_flip_left_right)"),
    Program("disentanglement_vae", "google-research/disentanglement_lib",
            "86a644d4ed35c771560dc3360756363d35477357", "google-research+disentanglement_lib",
            "bin/dlib_train", "beta-VAE (conv encoder/decoder) configured with gin, TF-Hub "
            "module export from the checkpoint, evaluate; use_tpu=False in the program",
            disentanglement_vae, has_use_tpu=False, tf1_libraries=("gin.tf", "tensorflow_hub"),
            eval_only="methods/unsupervised/train.py refuses (or with overwrite deletes) an "
            "existing model directory and trains before it evaluates"),
]
