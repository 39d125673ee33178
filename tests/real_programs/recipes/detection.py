"""Detection and segmentation: anchors and box coding, spatial partitioning
(`input_partition_dims`), COCO evaluation, 3D segmentation."""
import io
import os

import numpy as np

from tiny_data import write_json, write_tfrecord
from recipes.program import Program, ckpt, evaluation_with, seeded_rng, tpu_flag

TPU_COMMIT = "7dc921f846c9e4071f3884b768a7ddf521272a49"


def _jpeg(pixels):
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


def coco_records(rng, count, first_id, num_classes, height=64, width=96):
    """COCO as the TPU detection models' `create_coco_tf_record.py` writes it: a JPEG, its
    size and source id, normalized [0, 1] boxes with their classes, areas and crowd flags;
    and the COCO annotation JSON of the same objects (pixel [x, y, w, h] boxes)."""
    records, images, annotations = [], [], []
    for image_id in range(first_id, first_id + count):
        pixels = rng.randint(0, 60, size=(height, width, 3)).astype(np.uint8)
        boxes, classes = [], []
        for _ in range(1 + rng.randint(2)):
            h, w = rng.randint(16, 40), rng.randint(16, 40)
            y, x = rng.randint(0, height - h), rng.randint(0, width - w)
            label = 1 + rng.randint(num_classes - 1)
            pixels[y:y + h, x:x + w] = 60 + 40 * label  # a box of the class's brightness
            boxes.append((y, x, h, w))
            classes.append(label)
        records.append({
            "image/encoded": [_jpeg(pixels)], "image/format": ["jpeg"],
            "image/source_id": [str(image_id)], "image/height": [height],
            "image/width": [width],
            "image/object/bbox/ymin": [b[0] / height for b in boxes],
            "image/object/bbox/xmin": [b[1] / width for b in boxes],
            "image/object/bbox/ymax": [(b[0] + b[2]) / height for b in boxes],
            "image/object/bbox/xmax": [(b[1] + b[3]) / width for b in boxes],
            "image/object/class/label": classes,
            "image/object/area": [float(b[2] * b[3]) for b in boxes],
            "image/object/is_crowd": [0] * len(boxes)})
        images.append({"id": image_id, "height": height, "width": width})
        for (y, x, h, w), label in zip(boxes, classes):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": label, "bbox": [x, y, w, h],
                                "area": float(h * w), "iscrowd": 0})
    categories = [{"id": i, "name": "class%d" % i} for i in range(1, num_classes)]
    return records, {"images": images, "annotations": annotations, "categories": categories}


def retinanet(work, use_tpu):
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "coco"), os.path.join(work, "model")
    train, _ = coco_records(rng, 16, 1, num_classes=5)
    val, val_json = coco_records(rng, 8, 100, num_classes=5)
    write_tfrecord(os.path.join(data, "train-00000-of-00001.tfrecord"), train)
    write_tfrecord(os.path.join(data, "val-00000-of-00001.tfrecord"), val)
    write_json(os.path.join(data, "instances_val.json"), val_json)
    # Levels 3-5 of a 64x64 image: 8x8, 4x4 and 2x2 anchor grids.
    hparams = ("image_size=64,resnet_depth=18,num_classes=5,min_level=3,max_level=5,"
               "use_bfloat16=false")
    argv = ["--training_file_pattern=" + os.path.join(data, "train-*"),
            "--validation_file_pattern=" + os.path.join(data, "val-*"),
            "--val_json_file=" + os.path.join(data, "instances_val.json"),
            "--model_dir=" + model_dir, "--hparams=" + hparams, "--mode=train",
            "--eval_after_training=true", "--num_examples_per_epoch=16", "--num_epochs=1",
            "--train_batch_size=8", "--eval_batch_size=8", "--eval_samples=8",
            "--iterations_per_loop=1", "--inference_batch_size=1",
            "--add_warmup_requests=false"] + tpu_flag(use_tpu)
    # Not --use_spatial_partition: this commit's labels carry `image_info`, which the
    # program's labels partition dims do not list (TPUEstimator rejects the mismatch).
    if not use_tpu:
        # Off a TPU the program trains with Estimator + MirroredStrategy: its TPUEstimator
        # path reads `params['auto_mixed_precision']`, which only that branch sets (a
        # KeyError in TF 1.x too). That path trains only.
        return argv + ["--distribution_strategy=mirrored", "--num_gpus=0"], [
            ckpt(model_dir, 2), os.path.join(model_dir, "hparams.json")]
    return argv, [ckpt(model_dir, 2),
                  os.path.join(model_dir, "train_eval")]


def unet3d(work, use_tpu):
    """Liver-segmentation-format records: float32 CT volume bytes, one-hot float32 labels."""
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "liver"), os.path.join(work, "model")
    size, classes = 16, 3

    def volumes(count):
        for _ in range(count):
            image = rng.rand(size, size, size, 1).astype(np.float32)
            label = np.zeros((size, size, size, classes), np.float32)
            label[..., 0] = 1
            label[4:12, 4:12, 4:12] = 0
            label[4:12, 4:12, 4:12, 1 + rng.randint(2)] = 1  # a cube of one class
            image[label[..., 0] == 0] += 1
            yield {"image/ct_image": [image.tobytes()], "image/label": [label.tobytes()]}

    write_tfrecord(os.path.join(data, "train-0.tfrecord"), volumes(16))
    write_tfrecord(os.path.join(data, "eval-0.tfrecord"), volumes(8))
    config = write_json(os.path.join(work, "unet_tiny.yaml"), {  # JSON is YAML
        "input_image_size": [size, size, size], "num_classes": classes,
        "num_base_filters": 4, "depth": 2, "use_bfloat16": False, "compressed_input": False,
        "train_item_count": 16, "eval_item_count": 8, "train_epochs": 1,
        "train_batch_size": 8, "eval_batch_size": 8, "predict_batch_size": 8,
        "num_steps_per_eval": 2, "init_learning_rate": 0.001})
    # Off TPU, train only: the program's CPU evaluation passes `eval_metrics` to
    # EstimatorSpec, which has no such argument (TypeError in TF 1.x too).
    mode = "train_and_eval" if use_tpu else "train"
    argv = ["--model_dir=" + model_dir, "--config_file=" + config, "--mode=" + mode,
            "--training_file_pattern=" + os.path.join(data, "train-*"),
            "--eval_file_pattern=" + os.path.join(data, "eval-*"),
            "--iterations_per_loop=1", "--num_cores=8"] + tpu_flag(use_tpu)
    if use_tpu:  # 4 replicas of 2 cores, volumes split along their first spatial axis
        argv += ["--input_partition_dims=%d" % d for d in (1, 2, 1, 1, 1)]
    if not use_tpu:
        return argv, [ckpt(model_dir, 2), os.path.join(model_dir, "params.yaml")]
    # one cycle of num_steps_per_eval steps, then train_steps more, each evaluated
    return argv, [ckpt(model_dir, 4), os.path.join(model_dir, "params.yaml"),
                  os.path.join(model_dir, "eval")]



def efficientdet(work, use_tpu):
    """EfficientDet-D0 with a 128x128 input (its 5000 pre-NMS boxes need 5 classes x 3069
    anchors), a narrow single-cell BiFPN and single-layer heads on
    COCO-format records, 2 steps, then evaluation (`--eval_after_train`: pycocotools on the
    groundtruth its labels carry); `--strategy=tpu` on the simulated TPU, else its Estimator."""
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "coco"), os.path.join(work, "model")
    train, _ = coco_records(rng, 16, 1, num_classes=5)
    val, _ = coco_records(rng, 8, 100, num_classes=5)
    write_tfrecord(os.path.join(data, "train-00000-of-00001.tfrecord"), train)
    write_tfrecord(os.path.join(data, "val-00000-of-00001.tfrecord"), val)
    hparams = ("image_size=128,num_classes=5,fpn_num_filters=8,fpn_cell_repeats=1,"
               "box_class_repeats=1,max_instances_per_image=4,mixed_precision=false")
    return ["--mode=train", "--eval_after_train=true", "--model_name=efficientdet-d0",
            "--train_file_pattern=" + os.path.join(data, "train-*"),
            "--val_file_pattern=" + os.path.join(data, "val-*"),
            "--model_dir=" + model_dir, "--hparams=" + hparams, "--num_examples_per_epoch=16",
            "--num_epochs=1", "--train_batch_size=8", "--eval_batch_size=8",
            "--eval_samples=8", "--iterations_per_loop=1", "--save_checkpoints_steps=100",
            "--strategy=%s" % ("tpu" if use_tpu else "")], [
        ckpt(model_dir, 2), os.path.join(model_dir, "config.yaml")]


PROGRAMS = [
    Program("retinanet", "tensorflow/tpu", TPU_COMMIT, "tensorflow+tpu",
            "models/official/retinanet/retinanet_main.py",
            "RetinaNet (ResNet-18 FPN) on COCO-format records: anchors, box coding, focal "
            "loss, predict with outside_compilation + pycocotools eval, TPU SavedModel "
            "export", retinanet,
            copy_from="models", copy_to="models",
            pythonpath=("models/official/retinanet", "models"),
            check_paths=tuple("models/official/retinanet/" + f for f in (
                "retinanet_main.py", "retinanet_model.py", "retinanet_architecture.py",
                "dataloader.py", "anchors.py", "postprocess.py", "evaluation.py",
                "coco_metric.py", "object_detection")) + ("models/common",),
            # --mode=eval: its checkpoints_iterator predicts with the last checkpoint, computes
            # the COCO metrics and stops (step >= the run's steps); it prints them
            eval_only=evaluation_with(retinanet, mode="eval"), eval_log="printed_results",
            replica_check="batch norm: moving variances take n/(n-1) of each replica's "
            "count (TF1 too), so even identical examples on every replica do not give a "
            "1-replica run's"),
    Program("unet3d", "tensorflow/tpu", TPU_COMMIT, "tensorflow+tpu",
            "models/official/unet3d/unet_main.py", "3D U-Net segmentation (liver CT format), "
            "YAML params, train_and_eval cycles, spatial partitioning (input_partition_dims "
            "over 5-D volumes) on TPU, tf2 summaries in host_call, dice metrics", unet3d,
            copy_from="models", copy_to="models",
            pythonpath=("models/official/unet3d", "models"),
            check_paths=("models/official/unet3d", "models/hyperparameters"),
            eval_only=evaluation_with(unet3d, mode="eval"),  # the latest checkpoint
            replica_check="batch norm over 2-core spatial partitions of each volume "
            "(input_partition_dims): no 1-core run of the check has them"),
    Program("efficientdet", "google/automl", "6a54c8741e7c3265d4547c4f35f47a0391122dc5",
            "google+automl", "main.py",
            "EfficientDet-D0 (tf.compat.v1 main, TF2 Keras model and input pipeline modules) on "
            "COCO-format records: BiFPN, focal loss, --strategy=tpu TPUEstimator or Estimator, "
            "evaluation after training with COCO metrics, EMA", efficientdet,
            copy_from="efficientdet",
            eval_only=evaluation_with(efficientdet, mode="eval", eval_after_train="false",
                                      min_eval_interval="0", eval_timeout="1"),
            replica_check="batch norm: moving variances take n/(n-1) of each replica's count "
            "(TF1 too)"),
]
