# idem_embed_lua(TARGET script...): compiles lua/<script>.lua into TARGET as
# idem::lua::<script> (a std::string_view). Editing a script re-runs CMake.
function(idem_embed_lua target)
  set(IDEM_LUA_DEFINITIONS "")
  foreach(script IN LISTS ARGN)
    set(path "${PROJECT_SOURCE_DIR}/lua/${script}.lua")
    file(READ "${path}" source)
    string(APPEND IDEM_LUA_DEFINITIONS
           "extern const std::string_view ${script};\nconst std::string_view ${script} = R\"idem_lua(${source})idem_lua\";\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
  endforeach()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_lua.cpp")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/luasources.cpp.in" "${out}" @ONLY)
  target_sources(${target} PRIVATE "${out}")
endfunction()
