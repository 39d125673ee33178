"""One recipe per real program, grouped by area (one module each): where it lives, its tiny
data, and its tiny flags (`program.Program`)."""
from recipes import gans, image_classifiers, language, vision

PROGRAMS = language.PROGRAMS + vision.PROGRAMS + gans.PROGRAMS + image_classifiers.PROGRAMS


def by_name():
    return {p.name: p for p in PROGRAMS}
