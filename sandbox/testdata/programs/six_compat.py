# six, which older libraries still import.
import six
print(six.PY3, six.text_type.__name__, six.binary_type.__name__, six.integer_types)
print(list(six.iteritems({"a": 1})), six.ensure_str(b"bytes"), six.ensure_binary("text"))
from six.moves import urllib, range as srange
print(urllib.parse.quote("a b/c"), list(srange(3)))
