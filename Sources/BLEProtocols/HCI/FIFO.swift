/// A first-in first-out queue with O(1) amortised push and pop (an array with a moving head, compacted lazily).
///
/// Inlinable: other modules' data paths (a host's notification streams) use it specialised, without generic
/// metadata look-ups per call.
public struct FIFO<Element: Sendable>: Sendable {
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    /// An empty queue.
    @inlinable public init() {}

    /// The number of queued elements.
    @inlinable public var count: Int { storage.count - head }
    /// Whether nothing is queued.
    @inlinable public var isEmpty: Bool { head >= storage.count }

    /// Queues an element.
    @inlinable public mutating func append(_ element: Element) { storage.append(element) }
    /// Queues elements in order.
    @inlinable public mutating func append(contentsOf elements: some Sequence<Element>) { storage.append(contentsOf: elements) }

    /// Removes and returns the oldest element.
    @inlinable public mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            // Emptied: start again at the front, keeping the storage.
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Empties the queue.
    @inlinable public mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
