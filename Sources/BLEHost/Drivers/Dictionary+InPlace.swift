extension Dictionary {
    /// Runs `body` on the value for `key` where it is stored, and returns its result; `nil` without a value.
    ///
    /// Reading `self[key]` copies the whole value out — for a struct of arrays, sets and references, a retain of
    /// each and a release after — where this reaches the one field it needs; a change made through it happens in
    /// place, without the copy-on-write a `var copy = self[key]; …; self[key] = copy` round trip causes.
    mutating func withValue<R>(forKey key: Key, _ body: (inout Value) throws -> R) rethrows -> R? {
        guard let index = index(forKey: key) else { return nil }
        return try body(&values[index])
    }
}

extension Dictionary {
    /// Runs `body` on every key and its value where the value is stored (no copies; see ``withValue(forKey:_:)``).
    mutating func forEachInPlace(_ body: (Key, inout Value) throws -> Void) rethrows {
        var index = startIndex
        while index != endIndex {
            try body(keys[index], &values[index])
            formIndex(after: &index)
        }
    }
}
