# Records are dataclasses to a type checker: the same constructor, fields and frozenness.
from dataclasses import MISSING, Field
from dataclasses import FrozenInstanceError as FrozenRecordError
from dataclasses import dataclass as record
from dataclasses import field, fields, replace
from dataclasses import is_dataclass as is_record

__all__ = ["MISSING", "Field", "FrozenRecordError", "field", "fields", "is_record", "record",
           "replace"]
