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
