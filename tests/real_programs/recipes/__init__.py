"""One recipe per real program, grouped by area (one module each): where it lives, its tiny
data, and its tiny flags (`program.Program`)."""
from recipes import (canned, detection, gans, generative, image_classifiers, language, mobile,
                     recommendation, session_hooks, text, tf2_era, vendored, vision)

PROGRAMS = (language.PROGRAMS + vision.PROGRAMS + text.PROGRAMS + detection.PROGRAMS
            + generative.PROGRAMS + mobile.PROGRAMS + gans.PROGRAMS + image_classifiers.PROGRAMS
            + recommendation.PROGRAMS + tf2_era.PROGRAMS + canned.PROGRAMS
            + session_hooks.PROGRAMS + vendored.PROGRAMS)


def by_name():
    return {p.name: p for p in PROGRAMS}
