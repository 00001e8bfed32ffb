// SPDX-License-Identifier: Apache-2.0
// Closing an HDF5 file that HDF5 cannot finish writing (a full disk) without crashing later.
// HDF5 1.10 frees a file whose close failed but keeps its id; the library's cleanup at exit (in
// MPI_Finalize for the parallel build) then closes it again: a use after free, the segmentation
// fault of issue 29. So a failed write must never reach H5Fclose unresolved: the writer frees
// space and retries (run_record, checkpoint_file), and what is still unwritable is discarded
// here. Leaves out retrying (the writers know what they can free).
#pragma once

#include <hdf5.h>

namespace sb::io {

// The closer of every file scalebench opens for writing (an H5Handle Closer): flushes, and when
// the flush fails, discards what HDF5 could not write (h5_discard_unwritten) so that H5Fclose
// cannot fail for want of space. The file on disk then holds what its last successful flush
// wrote. A read-only file is closed plainly.
herr_t h5_close_file(hid_t file);

// H5Fflush, up to three times. HDF5 1.10.8 leaves its metadata cache's skip list enabled after a
// flush that failed while writing, so the next flush fails at once ("slist already enabled?")
// and resets it; the one after that writes again. False when no attempt succeeded.
bool h5_flush_retrying(hid_t file);

// Points the file's descriptor (sec2 driver) at an anonymous memory file: every later write of
// HDF5 to it, its close included, succeeds and goes nowhere, and the file on disk keeps what was
// written before. For a temporary that will be removed, or a file whose writes fail. Returns
// false when the file is not on a driver with a descriptor (then nothing changes).
bool h5_discard_unwritten(hid_t file);

}  // namespace sb::io
