// The CUDA templates of templates/*.cuh, embedded into the binary at build time
// (cmake/EmbedTemplates.cmake) and handed to NVRTC as named headers, so a generated kernel
// just writes `#include "row_reduce.cuh"` and no file is read at run time.
#ifndef KILN_TEMPLATES_EMBEDDED_TEMPLATES_H_
#define KILN_TEMPLATES_EMBEDDED_TEMPLATES_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {

// (file name, text) of every template, e.g. {"kiln_types.cuh", "// kiln_types.cuh: ..."}.
const std::vector<std::pair<std::string, std::string>>& EmbeddedTemplates();

}  // namespace kiln

#endif  // KILN_TEMPLATES_EMBEDDED_TEMPLATES_H_
