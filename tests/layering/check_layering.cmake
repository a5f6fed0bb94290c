# Fails when a component includes a header it may not (one of a component
# it does not use, or another component's internal header, *_internal.h),
# or when a component's target links what it may not or need not. The
# component map, which component may use which, is cmake/components.cmake
# (docs/design.md, "Layout").
#   cmake -DROOT=<repository> [-DLINKS=<build>/tessera_component_links.cmake]
#         -P check_layering.cmake
# LINKS, written by every configure (tessera_write_component_links), holds
# each component target's direct links as CMake has them; without it only
# the includes are checked. The link rules, for a target of component A:
#  1. it links (PUBLIC, PRIVATE or INTERFACE) only the targets of components
#     A uses, besides outside libraries;
#  2. each such link is needed: some file of A includes a header of it;
#  3. nothing comes with a link for nothing: every component whose target
#     ends up linked (through other components' links too, as a static
#     library's private links do) is one that A's files reach: through the
#     headers they include, the headers those include, and the files that
#     implement them. Linking a whole component for one small header of it
#     fails here.
#  4. the lean targets (what a job is, its JSON, the launchers, the HTTP
#     client: what other programs link) bring none of the heavy outside
#     libraries (ONNX, protobuf, GLPK, CBC, SQLite, OpenSSL), directly or
#     through any target they link.
cmake_minimum_required(VERSION 3.25)  # IN_LIST, POP_FRONT
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/components.cmake")
set(components ${TESSERA_COMPONENTS})

# Link rule failures that need a target split in code another change is
# rewriting, accepted until then. Each entry is "<target> -> <component>"
# as the failure names it, with the follow-up that empties it; an entry
# that no longer fails is an error too, so the list only shrinks.
# (tests/layering's own example passes its list as KNOWN_LINK_VIOLATIONS.)
set(known_link_violations)
if(DEFINED KNOWN_LINK_VIOLATIONS)
  set(known_link_violations ${KNOWN_LINK_VIOLATIONS})
endif()
# Rule 4's targets and libraries (tests/layering's example passes its own).
set(lean_targets tessera_jobs tessera_job_json tessera_launch tessera_client)
set(heavy_libraries onnx onnx_proto protobuf::libprotobuf tessera_glpk
                    PkgConfig::CBC SQLite::SQLite3 OpenSSL::Crypto)
if(DEFINED LEAN_TARGETS)
  set(lean_targets ${LEAN_TARGETS})
endif()
if(DEFINED HEAVY_LIBRARIES)
  set(heavy_libraries ${HEAVY_LIBRARIES})
endif()

# The project-relative headers a file includes ("component/...h").
function(includes_of file out)
  file(STRINGS "${file}" lines REGEX "^#include \"[a-z0-9_]+/")
  set(found "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
    list(APPEND found "${header}")
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# "target -> ... -> linked", the way the link walk below first reached
# `linked` from `target` (its via_<target>_<linked> steps).
function(link_path target linked out)
  set(path "${linked}")
  set(step "${linked}")
  while(NOT via_${target}_${step} STREQUAL target)
    set(step ${via_${target}_${step}})
    set(path "${step} -> ${path}")
  endwhile()
  set(${out} "${target} -> ${path}" PARENT_SCOPE)
endfunction()

set(failures "")
foreach(component ${components})
  file(GLOB_RECURSE sources "${ROOT}/${component}/*.h" "${ROOT}/${component}/*.cc"
       "${ROOT}/${component}/*.cu")
  set(included_${component} "")  # components whose headers it includes
  set(pending "")                  # headers to follow for the reach
  foreach(src ${sources})
    includes_of("${src}" headers)
    list(APPEND pending ${headers})
    foreach(header ${headers})
      string(REGEX REPLACE "/.*" "" target "${header}")
      if(target STREQUAL component)
        continue()
      endif()
      set(line "#include \"${header}\"")
      list(FIND components "${target}" known)
      if(known LESS 0)
        list(APPEND failures "${src}: ${component}/ includes ${target}/, which is no component (${line})")
        continue()
      endif()
      list(APPEND included_${component} ${target})
      list(FIND uses_${component} "${target}" allowed)
      if(allowed LESS 0)
        list(APPEND failures "${src}: ${component}/ must not use ${target}/ (${line})")
      endif()
      if(header MATCHES "_internal\\.h$")
        list(APPEND failures "${src}: ${line} is internal to ${target}/")
      endif()
    endforeach()
  endforeach()
  # The components its files reach: the headers they include, what those
  # include, and the files that implement them: a header's .cc of the same
  # name, or <name>_<part>.cc, beside it (service.h: service_queue.cc), and
  # the files that include its internal header (http_server.h:
  # http_server_internal.h: http_console_routes.cc).
  set(reached_${component} ${component})
  set(seen "")
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${header}")
    string(REGEX REPLACE "/.*" "" target "${header}")
    list(APPEND reached_${component} ${target})
    string(REGEX REPLACE "\\.h$" "" stem "${header}")
    file(GLOB implementation "${ROOT}/${stem}.cc" "${ROOT}/${stem}_*.cc")
    if(EXISTS "${ROOT}/${stem}_internal.h")
      list(APPEND pending "${stem}_internal.h")
    endif()
    if(header MATCHES "_internal\\.h$")
      get_filename_component(folder "${ROOT}/${header}" DIRECTORY)
      file(GLOB siblings "${folder}/*.cc" "${folder}/*.cu")
      foreach(file IN LISTS siblings)
        file(STRINGS "${file}" uses REGEX "^#include \"${header}\"")
        if(uses)
          list(APPEND implementation "${file}")
        endif()
      endforeach()
    endif()
    foreach(file IN LISTS implementation)
      includes_of("${file}" more)
      list(APPEND pending ${more})
    endforeach()
    if(EXISTS "${ROOT}/${header}")
      includes_of("${ROOT}/${header}" more)
      list(APPEND pending ${more})
    endif()
  endwhile()
  list(REMOVE_DUPLICATES included_${component})
  list(REMOVE_DUPLICATES reached_${component})
endforeach()

if(DEFINED LINKS)
  include("${LINKS}")
  set(link_failures "")  # "<target> -> <component>|message"
  foreach(target IN LISTS component_targets)
    set(component ${component_of_${target}})
    set(closure "")        # component targets it ends up linking
    set(pending "${target}")
    while(pending)
      list(POP_FRONT pending from)
      foreach(entry IN LISTS links_of_${from})
        string(REPLACE "|" ";" fields "${entry}")
        list(GET fields 0 linked)
        list(GET fields 1 scope)
        list(LENGTH fields n)
        set(owner "")
        if(n GREATER 2)
          list(GET fields 2 owner)
        endif()
        if(NOT owner)  # an outside library: rule 4's, for a lean target
          if(target IN_LIST lean_targets AND linked IN_LIST heavy_libraries
             AND NOT DEFINED via_${target}_${linked})
            set(via_${target}_${linked} ${from})
            list(APPEND heavy_of_${target} ${linked})
          endif()
          continue()
        endif()
        if(NOT linked IN_LIST closure)
          list(APPEND closure ${linked})
          list(APPEND pending ${linked})
          set(via_${target}_${linked} ${from})
        endif()
        if(NOT from STREQUAL target OR owner STREQUAL component)
          continue()
        endif()
        # Rules 1 and 2: the target's own links.
        list(FIND uses_${component} "${owner}" allowed)
        if(allowed LESS 0)
          list(APPEND failures "${target} (${component}/) links ${linked} (${scope}), but ${component}/ may not use ${owner}/")
          list(APPEND reported_${component} ${owner})
        elseif(NOT owner IN_LIST included_${component})
          list(APPEND failures "${target} (${component}/) links ${linked} (${scope}), but no file of ${component}/ includes a header of ${owner}/: drop the link")
          list(APPEND reported_${component} ${owner})
        endif()
      endforeach()
    endwhile()
    # Rule 3: what comes with the links; once a component (not again for
    # its other targets, nor for a link rule 1 or 2 named).
    foreach(linked IN LISTS closure)
      set(owner ${component_of_${linked}})
      if(NOT owner OR owner IN_LIST reached_${component} OR
         owner IN_LIST reported_${component})
        continue()
      endif()
      list(APPEND reported_${component} ${owner})
      link_path(${target} ${linked} path)
      list(APPEND link_failures "${target} -> ${owner}|${target} (${component}/) links ${owner}/ (${path}), but no file of ${component}/ reaches a header of ${owner}/, even through the headers it includes and their .cc files")
    endforeach()
  endforeach()
  set(known_seen "")
  foreach(failure IN LISTS link_failures)
    string(REGEX REPLACE "\\|.*" "" key "${failure}")
    string(REGEX REPLACE "^[^|]*\\|" "" text "${failure}")
    if(key IN_LIST known_link_violations)
      list(APPEND known_seen "${key}")
      message(STATUS "layering: known, until its follow-up: ${text}")
    else()
      list(APPEND failures "${text}")
    endif()
  endforeach()
  # Rule 4: the heavy libraries the walk above found under a lean target.
  foreach(target IN LISTS lean_targets)
    if(NOT target IN_LIST component_targets)
      list(APPEND failures "lean target ${target} is no component target: fix lean_targets in tests/layering/check_layering.cmake")
    endif()
    foreach(linked IN LISTS heavy_of_${target})
      link_path(${target} ${linked} path)
      list(APPEND failures "${target} is lean but links ${linked} (${path})")
    endforeach()
  endforeach()
  foreach(key IN LISTS known_link_violations)
    if(NOT key IN_LIST known_seen)
      list(APPEND failures "known_link_violations lists \"${key}\", which no longer fails: remove it from tests/layering/check_layering.cmake")
    endif()
  endforeach()
endif()

# Tests and benchmarks may include any component's public headers, and the
# internals of the component they test (tests/<component>/) only.
file(GLOB test_dirs LIST_DIRECTORIES true "${ROOT}/tests/*" "${ROOT}/bench/*")
foreach(dir ${test_dirs})
  if(NOT IS_DIRECTORY "${dir}")
    continue()
  endif()
  get_filename_component(owner "${dir}" NAME)
  if(owner STREQUAL "layering")  # this check's own examples of violations
    continue()
  endif()
  file(GLOB_RECURSE sources "${dir}/*.h" "${dir}/*.cc")
  foreach(src ${sources})
    file(STRINGS "${src}" includes REGEX "^#include \"[a-z0-9_/]+_internal\\.h\"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z0-9_]+)/.*" "\\1" target "${line}")
      if(NOT target STREQUAL owner)
        list(APPEND failures "${src}: ${line} is internal to ${target}/")
      endif()
    endforeach()
  endforeach()
endforeach()

# Namespaces follow folders: the code of component C is in tessera::C, or
# in a namespace inside it (common/'s in tessera itself). A file opens
# another component's namespace only to forward-declare its classes. A
# component not moved yet can be listed until its follow-up moves it (empty
# today: issue 30's part 4 moved the last ones, sim/ and service/); the list
# only shrinks (an entry that passes is an error).
set(known_namespace_violations)
if(DEFINED KNOWN_NAMESPACE_VIOLATIONS)
  set(known_namespace_violations ${KNOWN_NAMESPACE_VIOLATIONS})
endif()
foreach(component ${components})
  if(component STREQUAL "common")
    set(expected "tessera")
  else()
    set(expected "tessera::${component}")
  endif()
  file(GLOB_RECURSE sources "${ROOT}/${component}/*.h"
       "${ROOT}/${component}/*.cc" "${ROOT}/${component}/*.cu")
  set(wrong "")
  foreach(src ${sources})
    file(STRINGS "${src}" opened REGEX "^namespace tessera[a-z_:]* {")
    foreach(line IN LISTS opened)
      string(REGEX REPLACE "^namespace (tessera[a-z_:]*) {.*" "\\1" ns "${line}")
      if(ns STREQUAL expected OR ns MATCHES "^${expected}::")
        continue()
      endif()
      # Another component's namespace: forward declarations only.
      file(STRINGS "${src}" all)
      set(inside FALSE)
      set(only_declarations TRUE)
      foreach(l IN LISTS all)
        if(l STREQUAL "namespace ${ns} {")
          set(inside TRUE)
        elseif(inside AND l MATCHES "^}  // namespace")
          set(inside FALSE)
        elseif(inside AND NOT l MATCHES "^((class|struct) [A-Za-z0-9_]+;)?$")
          set(only_declarations FALSE)
        endif()
      endforeach()
      if(NOT only_declarations)
        list(APPEND wrong "${src}: ${component}/ code in namespace ${ns}, not ${expected}")
      endif()
    endforeach()
  endforeach()
  list(FIND known_namespace_violations ${component} known)
  if(known GREATER -1)
    if(wrong)
      list(LENGTH wrong n)
      message(STATUS "layering: known, until its follow-up: ${component}/ has ${n} file(s) outside namespace ${expected}")
    else()
      list(APPEND failures "${component}/ is listed in known_namespace_violations, but its files are all in ${expected}: delete it from the list")
    endif()
  else()
    list(APPEND failures ${wrong})
  endif()
endforeach()

if(failures)
  # One line each (FATAL_ERROR would wrap them).
  foreach(failure ${failures})
    message(STATUS "layering: ${failure}")
  endforeach()
  list(LENGTH failures count)
  message(FATAL_ERROR "layering violated ${count} time(s): see above")
endif()
string(REPLACE ";" " " listed "${components}")
if(DEFINED LINKS)
  message(STATUS "layering ok (includes and links): ${listed}")
else()
  message(STATUS "layering ok (includes only): ${listed}")
endif()
