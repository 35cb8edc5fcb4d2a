"""placeholder"""
from funcgrad.experimental.sparse._bcoo import *  # noqa
