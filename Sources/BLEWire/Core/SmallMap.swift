/// A map for the handful of entries the data path looks up on every packet (the links of a host, the controllers and
/// links of an air): keys and values in two arrays, found by a linear search while there are few, through a
/// `Dictionary` of positions once there are more than 16.
///
/// Why: a `Dictionary` look-up hashes its key (SipHash-1-3: `Hasher` init, combine, finalize) every time, about 200
/// instructions, where comparing a `UInt16` or an `Int` with a few others costs a handful; a notification crossed about
/// 25 such look-ups. Above 16 entries (a gateway's dozens of links, an air with many centrals) a look-up
/// hashes once, as a `Dictionary` does, and finds the value in the array.
///
/// Values are read and changed where they are stored: ``withValue(forKey:_:)`` and `map[key]?.field = …` change a
/// value in place, without the copy (and the copy-on-write of the arrays and sets inside it) that
/// `var copy = map[key]; …; map[key] = copy` causes.
///
/// Order: iteration runs in insertion order, except that removing an entry moves the last entry into its place
/// (removal is O(1)). Callers that need an order (by key, say) sort.
public struct SmallMap<Key: Hashable, Value> {
    /// Up to this many entries, look-ups search the keys linearly; above, through `positions`.
    @usableFromInline static var linearLimit: Int { 16 }

    @usableFromInline var keyStorage: [Key] = []
    /// The values, each at its key's position. Never `nil` outside an access: optional so that `map[key]` can yield
    /// the stored value itself (set to `nil`, the entry goes), and a removal can move the last value into the gap
    /// (`take()`) without the copy `Array.swapAt` makes.
    @usableFromInline var valueStorage: [Value?] = []
    /// Each key's position in the arrays, once there are more than `linearLimit` entries (dropped again at half).
    @usableFromInline var positions: [Key: Int]?

    /// An empty map.
    @inlinable public init() {}

    /// The number of entries.
    @inlinable public var count: Int { keyStorage.count }
    /// Whether the map has no entries.
    @inlinable public var isEmpty: Bool { keyStorage.isEmpty }
    /// The keys, in the map's order.
    @inlinable public var keys: [Key] { keyStorage }
    /// The values, in the map's order (the order of ``keys``).
    @inlinable public var values: [Value] { valueStorage.compactMap { $0 } }

    /// The position of `key` in the map's order, or `nil`.
    @inlinable public func position(of key: Key) -> Int? {
        if let positions { return positions[key] }
        var i = 0
        let n = keyStorage.count
        while i < n {
            if keyStorage[i] == key { return i }
            i += 1
        }
        return nil
    }

    /// Whether the map has a value for `key`.
    @inlinable public func contains(_ key: Key) -> Bool { position(of: key) != nil }

    /// The value for `key`; setting `nil` removes the entry. Changing it through optional chaining
    /// (`map[key]?.field = …`) changes the stored value in place (but the access allocates its frame, about 300
    /// instructions: the hottest paths use ``withValue(forKey:_:)``).
    @inlinable public subscript(key: Key) -> Value? {
        get {
            guard let i = position(of: key) else { return nil }
            return valueStorage[i]
        }
        set {
            if let i = position(of: key) {
                if newValue != nil { valueStorage[i] = newValue } else { remove(at: i) }
            } else if let newValue {
                append(key, newValue)
            }
        }
        _modify {
            if let i = position(of: key) {
                // The stored value itself is yielded (no move, no copy); set to nil, its entry goes.
                defer { if valueStorage[i] == nil { removeVacated(at: i) } }
                yield &valueStorage[i]
            } else {
                var value: Value?
                defer { if let added = value.take() { append(key, added) } }
                yield &value
            }
        }
    }

    /// The value for `key`, or `defaultValue()` added for it first when changed; changes happen in place.
    @inlinable public subscript(key: Key, default defaultValue: @autoclosure () -> Value) -> Value {
        get {
            guard let i = position(of: key), let value = valueStorage[i] else { return defaultValue() }
            return value
        }
        _modify {
            let i: Int
            if let found = position(of: key) {
                i = found
            } else {
                i = keyStorage.count
                append(key, defaultValue())
            }
            // Never nil here: every entry has its value outside an access.
            yield &valueStorage[i]!
        }
    }

    /// Runs `body` on the value for `key` where it is stored, and returns its result; `nil` without a value.
    @discardableResult
    @inlinable public mutating func withValue<R>(forKey key: Key, _ body: (inout Value) throws -> R) rethrows -> R? {
        guard let i = position(of: key) else { return nil }
        // Never nil here: every entry has its value outside an access.
        return try body(&valueStorage[i]!)
    }

    /// Runs `body` on every key and its value where the value is stored, in the map's order.
    @inlinable public mutating func forEachInPlace(_ body: (Key, inout Value) throws -> Void) rethrows {
        for i in keyStorage.indices { try body(keyStorage[i], &valueStorage[i]!) }
    }

    /// Removes the entry for `key` and returns its value; `nil` without one.
    @discardableResult
    @inlinable public mutating func removeValue(forKey key: Key) -> Value? {
        guard let i = position(of: key) else { return nil }
        return remove(at: i)
    }

    /// Removes every entry.
    @inlinable public mutating func removeAll() {
        keyStorage.removeAll()
        valueStorage.removeAll()
        positions = nil
    }

    @inlinable mutating func append(_ key: Key, _ value: Value) {
        keyStorage.append(key)
        valueStorage.append(value)
        if positions != nil {
            positions?[key] = keyStorage.count - 1
        } else if keyStorage.count > Self.linearLimit {
            var index: [Key: Int] = [:]
            index.reserveCapacity(keyStorage.count * 2)
            for (i, k) in keyStorage.enumerated() { index[k] = i }
            positions = index
        }
    }

    /// Removes the entry at `i`, the last entry taking its place.
    @discardableResult
    @inlinable mutating func remove(at i: Int) -> Value? {
        let value = valueStorage[i].take()
        removeVacated(at: i)
        return value
    }

    /// Removes the entry at `i`, whose value was moved out: the last entry moves to `i` (its value moved, not copied).
    @inlinable mutating func removeVacated(at i: Int) {
        let last = keyStorage.count - 1
        let key = keyStorage[i]
        if i != last {
            keyStorage[i] = keyStorage[last]
            valueStorage[i] = valueStorage[last].take()
            positions?[keyStorage[i]] = i
        }
        keyStorage.removeLast()
        valueStorage.removeLast()
        positions?[key] = nil
        if positions != nil, keyStorage.count <= Self.linearLimit / 2 { positions = nil }
    }
}

extension SmallMap: Sequence {
    /// Walks the entries in the map's order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let keys: [Key]
        @usableFromInline let values: [Value?]
        @usableFromInline var i = 0

        @inlinable init(keys: [Key], values: [Value?]) {
            self.keys = keys
            self.values = values
        }

        @inlinable public mutating func next() -> (key: Key, value: Value)? {
            while i < keys.count {
                defer { i += 1 }
                if let value = values[i] { return (keys[i], value) }
            }
            return nil
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(keys: keyStorage, values: valueStorage) }
    @inlinable public var underestimatedCount: Int { keyStorage.count }
}

extension SmallMap: Sendable where Key: Sendable, Value: Sendable {}
extension SmallMap.Iterator: Sendable where Key: Sendable, Value: Sendable {}
