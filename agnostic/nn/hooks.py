"""RemovableHandle: what ``register_forward_hook`` and friends return, to take the hook off again."""

import itertools
import weakref

_next_id = itertools.count()


class RemovableHandle:
    """A handle that removes its hook from the hook dicts it was registered in (``remove()`` or ``with``)."""

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_next_id)
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict] if extra_dict is not None \
            else []
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        """Unregister the hook (harmless if it already was)."""
        for reference in (self.hooks_dict_ref,) + self.extra_dict_ref:
            hooks = reference()
            if hooks is not None and self.id in hooks:
                del hooks[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()
        return False
