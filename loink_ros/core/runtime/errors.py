"""Error codes of the solver; the values match loink_msgs/msg/ErrorCode."""

from enum import IntEnum


class ErrorCode(IntEnum):
    """Why a request was refused."""

    SUCCESS = 0
    INVALID_TASK_DIMENSION = 1
    NON_FINITE_INPUT = 2
    EMPTY_REQUEST = 3
    TASK_OUT_OF_BOUNDS = 4
    INVALID_COUNT = 5
    INVALID_SPREAD = 6
    INVALID_LATENT = 7
    INVALID_SEED_STATE = 8
    NO_SOLUTION = 9
    REQUEST_TOO_LARGE = 10
    INVALID_POSE = 11
    INVALID_LINK = 12
    INVALID_FRAME = 13
    POSE_NOT_SERVED = 14
    POSE_UNREACHABLE = 15
    INTERNAL_ERROR = 99


class SolverError(ValueError):
    """A request the solver refuses, with a code and a message for the caller."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message

    def __str__(self) -> str:
        return f'{self.code.name}: {self.message}'


class ModelFileError(RuntimeError):
    """A model file that is missing, unreadable or inconsistent."""
