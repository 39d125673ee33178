"""An out-of-memory error in the device loop, named with the batch size that caused it."""
import tensorflow as tf

_BATCH_SIZE_ARGS = {"train": "train_batch_size", "eval": "eval_batch_size",
                    "infer": "predict_batch_size"}


class OutOfMemoryError(tf.errors.ResourceExhaustedError):
    """A step needed more memory than its device has."""

    def __init__(self, mode, batch_size, num_replicas, detail):
        self.mode, self.batch_size, self.num_replicas = mode, batch_size, num_replicas
        self._detail = detail
        if batch_size:
            batch = (f"a batch of {batch_size} examples per replica ({batch_size * num_replicas} "
                     f"in all on {num_replicas} replica(s))")
            fix = (f"Lower the batch size (TPUEstimator's {_BATCH_SIZE_ARGS.get(mode, '')}, "
                   "or the batch input_fn makes)")
        else:
            batch, fix = "the batches input_fn gave", "Lower the batch size input_fn makes"
        super().__init__(
            None, None,
            f"Out of memory in a {mode} step with {batch}: {detail}. {fix}, or make the model "
            "or its inputs smaller; nothing of this loop was kept.")

    def __reduce__(self):
        return type(self), (self.mode, self.batch_size, self.num_replicas, self._detail)


def explaining_out_of_memory(loop, mode, batch_size, num_replicas):
    """`loop` (a device loop function) raising OutOfMemoryError for an allocation failure."""
    def run(*args):
        try:
            return loop(*args)
        except tf.errors.ResourceExhaustedError as error:
            lines = [line[line.index("OOM"):] for line in str(error).splitlines()
                     if "OOM when allocating" in line]
            if not lines:
                raise
            raise OutOfMemoryError(mode, batch_size, num_replicas,
                                   lines[0].split(" [[")[0].strip()) from error
    return run
