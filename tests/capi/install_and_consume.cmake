# cmake -P script for the test capi_install_test: installs the kiln build BUILD_DIR into a
# fresh prefix under WORK_DIR, configures and builds tests/capi/consumer (find_package(kiln))
# against it, and runs the consumer on GRAPH. Any step failing fails the test.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GRAPH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_and_consume.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(JOIN " " line ${ARGN})
    message(FATAL_ERROR "failed (${rc}): ${line}")
  endif()
endfunction()

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
foreach(path include/kiln/kiln.h lib/cmake/kiln/kilnConfig.cmake)
  if(NOT EXISTS ${WORK_DIR}/prefix/${path})
    message(FATAL_ERROR "the install lacks ${path}")
  endif()
endforeach()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/capi/consumer -B ${WORK_DIR}/build -G Ninja
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=RelWithDebInfo)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/kiln_consumer ${GRAPH})
