"""Random stand-ins for the data sets the example programs download (same shapes and dtypes), so
that the programs run offline. Written into the examples' copies as ``examples/datasets.py``
(JAX) and ``data_mnist.py`` (autograd)."""

import os

import numpy as np

_RNG = np.random.RandomState(0)
# MNIST's sizes; FAKE_DATA_FRACTION (run_examples.py --data-fraction) keeps that share of the
# examples, each of the same shape, so that programs reach their evaluation steps quickly.
_FRACTION = float(os.environ.get("FAKE_DATA_FRACTION", "1"))
_N_TRAIN, _N_TEST = max(1, int(60000 * _FRACTION)), max(1, int(10000 * _FRACTION))


def mnist_raw():
    train_images = _RNG.randint(0, 256, (_N_TRAIN, 28, 28)).astype(np.uint8)
    train_labels = _RNG.randint(0, 10, _N_TRAIN).astype(np.uint8)
    test_images = _RNG.randint(0, 256, (_N_TEST, 28, 28)).astype(np.uint8)
    test_labels = _RNG.randint(0, 10, _N_TEST).astype(np.uint8)
    return train_images, train_labels, test_images, test_labels


def mnist(permute_train=False):
    train_images, train_labels, test_images, test_labels = mnist_raw()
    flat = lambda x: np.reshape(x, (x.shape[0], -1)) / np.float32(255.0)  # noqa: E731
    one_hot = lambda x: np.array(x[:, None] == np.arange(10), np.float32)  # noqa: E731
    return flat(train_images), one_hot(train_labels), flat(test_images), one_hot(test_labels)
