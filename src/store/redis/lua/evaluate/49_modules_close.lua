    -- (inside module_of(), from 40_modules_open.lua: its end)
    if kind == 2 then
        slide_m = slide_module()
        return slide_m
    end
    log_m = log_module()
    return log_m
end

