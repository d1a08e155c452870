// The C side of event delivery: the library calls go_cosid_on_event on a runtime's background thread (or, for
// the events of a start, on the thread that starts it); it hands the event to the exported Go function, with the
// subscriber's cgo.Handle that travels as userdata.
#include <stdint.h>
#include <cosid.h>
#include "_cgo_export.h"

void go_cosid_on_event(void *userdata, const cosid_event *event) {
    goCosidEvent((uintptr_t)userdata, (cosid_event *)event);
}
