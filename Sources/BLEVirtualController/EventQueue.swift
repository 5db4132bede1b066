/// A time-ordered queue of simulated events; events due at the same instant run in insertion order.
struct EventQueue<Event: Sendable>: Sendable {
    private struct Entry: Sendable {
        var time: UInt64
        var sequence: UInt64
        var event: Event
        func precedes(_ other: Entry) -> Bool { (time, sequence) < (other.time, other.sequence) }
    }
    private var heap: [Entry] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    /// The time of the earliest event.
    var nextTime: UInt64? { heap.first?.time }

    mutating func schedule(_ event: Event, at time: UInt64) {
        sequence &+= 1
        heap.append(Entry(time: time, sequence: sequence, event: event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest event if it is due at or before `time`.
    mutating func popDue(notAfter time: UInt64) -> (UInt64, Event)? {
        guard let first = heap.first, first.time <= time else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
                if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return (first.time, first.event)
    }

    mutating func removeAll() { heap.removeAll() }
}
