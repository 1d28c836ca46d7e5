class LRUCache:
    """A least-recently-used cache with a fixed capacity."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.items = {}

    def get(self, key):
        value = self.items.pop(key, None)
        if value is not None:
            self.items[key] = value
        return value

    def put(self, key, value):
        self.items.pop(key, None)
        if len(self.items) >= self.capacity:
            del self.items[next(iter(self.items))]
        self.items[key] = value
