"""`NanLossDuringTrainingError`: training stopped because the loss or the weights became
non-finite (raised by the training loop and, before a save, by `checkpoint_saves.py`)."""
import tensorflow as tf


class NanLossDuringTrainingError(tf.compat.v1.train.NanLossDuringTrainingError):
    """The loss or the weights became NaN or infinite (the original NanTensorHook's error).

    A subclass of `tf.compat.v1.train.NanLossDuringTrainingError`, which programs catch.
    Either some replica's loss was not finite during the loop of global steps
    `loop_start..loop_end`, or (`variables` set) every loss was finite but the variables held
    NaN/Inf when a checkpoint was due at `loop_end` (a NaN gradient, e.g. on a loop's last
    step; for the non-trainable ones among them, `untrained`, an update op of model_fn). No
    checkpoint is ever written from non-finite weights, so `latest_checkpoint` (None: none
    yet) holds the newest finite weights.
    """

    def __init__(self, loop_start=None, loop_end=None, latest_checkpoint=None, variables=None,
                 untrained=None):
        super().__init__()
        self.loop_start, self.loop_end = loop_start, loop_end
        self.latest_checkpoint = latest_checkpoint
        self.variables = list(variables or [])
        self.untrained = [name for name in untrained or [] if name in self.variables]

    def __reduce__(self):
        return type(self), (self.loop_start, self.loop_end, self.latest_checkpoint,
                            self.variables, self.untrained)

    def __str__(self):
        if self.loop_end is None:
            return "NaN loss during training."
        if self.variables:
            trained = [name for name in self.variables if name not in self.untrained]
            if not self.untrained:
                cause = f"({_names(trained)}): a gradient was not finite"
            else:
                cause = (f"({_names(self.untrained)}: not trainable, so no gradient put it there "
                         "but an update of model_fn (an assign, a moving average of NaN/Inf "
                         "values)" + (f"; {_names(trained)}: a gradient was not finite"
                                      if trained else "") + ")")
            what = (f"Every replica's loss was finite, but at global step {self.loop_end} "
                    f"{len(self.variables)} variable(s) hold NaN/Inf {cause}. The checkpoint "
                    f"for step {self.loop_end} was not written")
        else:
            what = (f"The loss of at least one replica was not finite during the loop of "
                    f"global steps {self.loop_start}..{self.loop_end}")
        if self.latest_checkpoint:
            kept = (f"checkpoints are only written from finite weights, so the latest one, "
                    f"{self.latest_checkpoint}, is the last good one")
        else:
            kept = "no checkpoint has been written from this model_dir's training yet"
        return (f"NaN loss during training. {what}; {kept}. Lower the learning rate, clip "
                "gradients or check the input for NaN/Inf.")


def _names(names):
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
