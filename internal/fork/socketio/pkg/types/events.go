package types

import (
	"reflect"
	"sync"
)

const (
	// Version current version number
	EventVersion = "0.0.3"
)

type (
	// EventName is just a type of string, it's the event name
	EventName string
	// Listener is the type of a Listener, it's a func which receives any,optional, arguments from the caller/emmiter
	EventListener func(...any)
	// Events the type for registered listeners, it's just a map[string][]func(...any)
	Events map[EventName][]EventListener
	// EventEmitter is the message/or/event manager
	EventEmitter interface {
		// AddListener is an alias for .On(eventName, listener).
		AddListener(EventName, ...EventListener) error
		// Emit fires a particular event,
		// Synchronously calls each of the listeners registered for the event named
		// eventName, in the order they were registered,
		// passing the supplied arguments to each.
		Emit(EventName, ...any)
		// EventNames returns an array listing the events for which the emitter has registered listeners.
		// The values in the array will be strings.
		EventNames() []EventName
		// ListenerCount returns the length of all registered listeners to a particular event
		ListenerCount(EventName) int
		// Listeners returns a copy of the array of listeners for the event named eventName.
		Listeners(EventName) []EventListener
		// On registers a particular listener for an event, func receiver parameter(s) is/are optional
		On(EventName, ...EventListener) error
		// Once adds a one time listener function for the event named eventName.
		// The next time eventName is triggered, this listener is removed and then invoked.
		Once(EventName, ...EventListener) error
		// RemoveAllListeners removes all listeners, or those of the specified eventName.
		// Note that it will remove the event itself.
		// Returns an indicator if event and listeners were found before the remove.
		RemoveAllListeners(EventName) bool
		// RemoveListener removes given listener from the event named eventName.
		// Returns an indicator whether listener was removed
		RemoveListener(EventName, EventListener) bool
		// Clear removes all events and all listeners, restores Events to an empty value
		Clear()
		// Len returns the length of all registered events
		Len() int
	}

	eventEntry struct {
		fn  EventListener
		ptr uintptr
	}

	// Patched: listeners live in a plain map of copy-on-write slices under
	// one mutex (upstream: a sync.Map clone of per-event locked slices,
	// ~4.5 KiB per connection over its six emitters, and a slice copy on
	// every Emit). Emit iterates the slice it read under the lock; additions
	// and removals publish a new slice, so a listener may add or remove
	// listeners while it runs.
	emmiter struct {
		mu           sync.Mutex
		evtListeners map[EventName][]*eventEntry
	}
)

// CopyTo copies the event listeners to an EventEmitter
func (e Events) CopyTo(emitter EventEmitter) {
	if len(e) > 0 {
		// register the events to/with their listeners
		for evt, listeners := range e {
			if len(listeners) > 0 {
				_ = emitter.AddListener(evt, listeners...)
			}
		}
	}
}

// New returns a new, empty, EventEmitter
func NewEventEmitter() EventEmitter {
	return &emmiter{}
}

func (e *emmiter) addListeners(evt EventName, listeners []*eventEntry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.evtListeners[evt]
	n := make([]*eventEntry, len(old), len(old)+len(listeners))
	copy(n, old)
	for _, l := range listeners {
		if l != nil {
			n = append(n, l)
		}
	}
	if e.evtListeners == nil {
		e.evtListeners = make(map[EventName][]*eventEntry)
	}
	e.evtListeners[evt] = n
	return nil
}

// load returns the listeners of evt; the slice is never written again.
func (e *emmiter) load(evt EventName) []*eventEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.evtListeners[evt]
}

func (e *emmiter) AddListener(evt EventName, listeners ...EventListener) error {
	if len(listeners) == 0 {
		return nil
	}

	events := make([]*eventEntry, len(listeners))
	for i, event := range listeners {
		if event == nil {
			continue
		}
		events[i] = &eventEntry{fn: event, ptr: reflect.ValueOf(event).Pointer()}
	}

	return e.addListeners(evt, events)
}

// Alias: [AddListener]
func (e *emmiter) On(evt EventName, listeners ...EventListener) error {
	return e.AddListener(evt, listeners...)
}

func (e *emmiter) Emit(evt EventName, data ...any) {
	for _, event := range e.load(evt) {
		event.fn(data...)
	}
}

func (e *emmiter) EventNames() []EventName {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]EventName, 0, len(e.evtListeners))
	for name := range e.evtListeners {
		names = append(names, name)
	}
	return names
}

func (e *emmiter) ListenerCount(evt EventName) int {
	return len(e.load(evt))
}

func (e *emmiter) Listeners(evt EventName) []EventListener {
	entries := e.load(evt)
	if entries == nil {
		return nil
	}
	listeners := make([]EventListener, len(entries))
	for i, l := range entries {
		listeners[i] = l.fn
	}
	return listeners
}

type oneTimeListener struct {
	fired *sync.Once

	evt     EventName
	emitter *emmiter
	fn      EventListener
}

func (l *oneTimeListener) execute(vals ...any) {
	l.fired.Do(func() {
		defer l.emitter.RemoveListener(l.evt, l.fn)
		l.fn(vals...)
	})
}

func (e *emmiter) Once(evt EventName, listeners ...EventListener) error {
	if len(listeners) == 0 {
		return nil
	}

	events := make([]*eventEntry, len(listeners))
	for i, event := range listeners {
		if event == nil {
			continue
		}
		oneTime := &oneTimeListener{fired: &sync.Once{}, evt: evt, emitter: e, fn: event}
		events[i] = &eventEntry{fn: oneTime.execute, ptr: reflect.ValueOf(event).Pointer()}
	}
	return e.addListeners(evt, events)
}

// RemoveListener removes the first registration of listener for the event
// named eventName.
func (e *emmiter) RemoveListener(evt EventName, listener EventListener) bool {
	if listener == nil {
		return false
	}
	targetPtr := reflect.ValueOf(listener).Pointer()

	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.evtListeners[evt]
	for i, l := range old {
		if l.ptr != targetPtr {
			continue
		}
		// As upstream, the event stays known (Len, EventNames) without
		// listeners.
		var n []*eventEntry
		if len(old) > 1 {
			n = make([]*eventEntry, 0, len(old)-1)
		}
		n = append(append(n, old[:i]...), old[i+1:]...)
		e.evtListeners[evt] = n
		return true
	}
	return false
}

func (e *emmiter) RemoveAllListeners(evt EventName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, loaded := e.evtListeners[evt]
	delete(e.evtListeners, evt)
	return loaded
}

func (e *emmiter) Clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evtListeners = nil
}

func (e *emmiter) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.evtListeners)
}
