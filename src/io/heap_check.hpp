// SPDX-License-Identifier: Apache-2.0
// Pre-flight checks of an HDF5 file's heaps, run before libhdf5 reads them: its global heap
// collections ("GCOL" blocks, where HDF5 keeps variable-length strings) and the sizes its local
// heaps claim (below).
// HDF5 1.10 (Debian 12) trusts the object sizes it finds in a collection: a damaged size makes
// H5HG_read copy gigabytes past the block (a crash) and a zero-sized free-space object makes
// the collection parser loop forever. Both were found by fuzz/fuzz_results_reader. This check
// walks every collection the way libhdf5 does and refuses the file, naming the byte offset,
// when an object does not fit its collection or would not advance the walk. The result files'
// opener and the checkpoint reader run it before H5Fopen.
// Leaves out the references to heap objects (inside attributes and datasets) and every other
// HDF5 structure: libhdf5 checks those itself and fails with an error, not a crash.
#pragma once

#include <filesystem>

namespace sb::io {

// Throws sb::UserError "<file> is damaged: ..." when a global heap collection is inconsistent
// or a local heap ("HEAP" version 0, where HDF5 keeps a group's link names) claims a data
// segment larger than the file: libhdf5 1.10's H5HL loader allocates the claimed size before
// reading it (a 1 TiB request found by fuzz/fuzz_results_reader, an abort under
// AddressSanitizer). Does nothing for a file without an HDF5 superblock at offset 0, 512, 1024,
// ... (H5Fis_hdf5 rejects those) and reads the file once, in blocks, whatever its size.
void check_heaps(const std::filesystem::path& file);

}  // namespace sb::io
