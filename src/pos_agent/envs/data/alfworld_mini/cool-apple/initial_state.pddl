;; alfworld-mini: cool-apple (kitchen)
;; The apple sits in the garbage can next to other produce; chill it in the fridge and put it on a countertop.
;; Display names: Cabinet_bar_2 = cabinet 1, Cabinet_bar_1 = cabinet 2, CounterTop_bar_2 = countertop 1, CounterTop_bar_1 = countertop 2, DiningTable_bar_1 = diningtable 1, Drawer_bar_2 = drawer 1, Drawer_bar_1 = drawer 2, Fridge_bar_1 = fridge 1, GarbageCan_bar_1 = garbagecan 1, Microwave_bar_1 = microwave 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, StoveBurner_bar_2 = stoveburner 1, StoveBurner_bar_1 = stoveburner 2, Toaster_bar_1 = toaster 1
;;                Apple_bar_1 = apple 1, Tomato_bar_1 = tomato 1, Potato_bar_1 = potato 1, Lettuce_bar_1 = lettuce 1, Egg_bar_1 = egg 1, Bread_bar_1 = bread 1, Mug_bar_1 = mug 1, ButterKnife_bar_1 = butterknife 1, Pan_bar_1 = pan 1
(define (problem cool_apple)
    (:domain alfred)
    (:objects
        agent1 - agent
        AppleType - otype
        BreadType - otype
        ButterKnifeType - otype
        EggType - otype
        KnifeType - otype
        LettuceType - otype
        MugType - otype
        PanType - otype
        PotatoType - otype
        TomatoType - otype
        CabinetType - rtype
        CounterTopType - rtype
        DiningTableType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        StoveBurnerType - rtype
        ToasterType - rtype
        Apple_bar_1 - object
        Tomato_bar_1 - object
        Potato_bar_1 - object
        Lettuce_bar_1 - object
        Egg_bar_1 - object
        Bread_bar_1 - object
        Mug_bar_1 - object
        ButterKnife_bar_1 - object
        Pan_bar_1 - object
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CounterTop_bar_2 - receptacle
        CounterTop_bar_1 - receptacle
        DiningTable_bar_1 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Fridge_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Microwave_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        StoveBurner_bar_2 - receptacle
        StoveBurner_bar_1 - receptacle
        Toaster_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
        loc_bar_14 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_1)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_2)
        (openable Cabinet_bar_1)
        (receptacleType CounterTop_bar_2 CounterTopType)
        (receptacleAtLocation CounterTop_bar_2 loc_bar_3)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_4)
        (receptacleType DiningTable_bar_1 DiningTableType)
        (receptacleAtLocation DiningTable_bar_1 loc_bar_5)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_6)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_7)
        (openable Drawer_bar_1)
        (receptacleType Fridge_bar_1 FridgeType)
        (receptacleAtLocation Fridge_bar_1 loc_bar_8)
        (openable Fridge_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_9)
        (receptacleType Microwave_bar_1 MicrowaveType)
        (receptacleAtLocation Microwave_bar_1 loc_bar_10)
        (openable Microwave_bar_1)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_11)
        (receptacleType StoveBurner_bar_2 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_2 loc_bar_12)
        (receptacleType StoveBurner_bar_1 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_1 loc_bar_13)
        (receptacleType Toaster_bar_1 ToasterType)
        (receptacleAtLocation Toaster_bar_1 loc_bar_14)
        (objectType Apple_bar_1 AppleType)
        (inReceptacle Apple_bar_1 GarbageCan_bar_1)
        (objectAtLocation Apple_bar_1 loc_bar_9)
        (pickupable Apple_bar_1)
        (heatable Apple_bar_1)
        (coolable Apple_bar_1)
        (cleanable Apple_bar_1)
        (objectType Tomato_bar_1 TomatoType)
        (inReceptacle Tomato_bar_1 DiningTable_bar_1)
        (objectAtLocation Tomato_bar_1 loc_bar_5)
        (pickupable Tomato_bar_1)
        (heatable Tomato_bar_1)
        (coolable Tomato_bar_1)
        (cleanable Tomato_bar_1)
        (objectType Potato_bar_1 PotatoType)
        (inReceptacle Potato_bar_1 DiningTable_bar_1)
        (objectAtLocation Potato_bar_1 loc_bar_5)
        (pickupable Potato_bar_1)
        (heatable Potato_bar_1)
        (coolable Potato_bar_1)
        (cleanable Potato_bar_1)
        (objectType Lettuce_bar_1 LettuceType)
        (inReceptacle Lettuce_bar_1 Fridge_bar_1)
        (objectAtLocation Lettuce_bar_1 loc_bar_8)
        (pickupable Lettuce_bar_1)
        (coolable Lettuce_bar_1)
        (cleanable Lettuce_bar_1)
        (objectType Egg_bar_1 EggType)
        (inReceptacle Egg_bar_1 Fridge_bar_1)
        (objectAtLocation Egg_bar_1 loc_bar_8)
        (pickupable Egg_bar_1)
        (heatable Egg_bar_1)
        (coolable Egg_bar_1)
        (cleanable Egg_bar_1)
        (objectType Bread_bar_1 BreadType)
        (inReceptacle Bread_bar_1 CounterTop_bar_2)
        (objectAtLocation Bread_bar_1 loc_bar_3)
        (pickupable Bread_bar_1)
        (heatable Bread_bar_1)
        (coolable Bread_bar_1)
        (objectType Mug_bar_1 MugType)
        (inReceptacle Mug_bar_1 Cabinet_bar_2)
        (objectAtLocation Mug_bar_1 loc_bar_1)
        (pickupable Mug_bar_1)
        (heatable Mug_bar_1)
        (coolable Mug_bar_1)
        (cleanable Mug_bar_1)
        (isReceptacleObject Mug_bar_1)
        (objectType ButterKnife_bar_1 ButterKnifeType)
        (inReceptacle ButterKnife_bar_1 Drawer_bar_1)
        (objectAtLocation ButterKnife_bar_1 loc_bar_7)
        (pickupable ButterKnife_bar_1)
        (cleanable ButterKnife_bar_1)
        (objectType Pan_bar_1 PanType)
        (inReceptacle Pan_bar_1 StoveBurner_bar_1)
        (objectAtLocation Pan_bar_1 loc_bar_13)
        (pickupable Pan_bar_1)
        (coolable Pan_bar_1)
        (cleanable Pan_bar_1)
        (isReceptacleObject Pan_bar_1)
        (canContain CabinetType MugType)
        (canContain CabinetType PanType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType BreadType)
        (canContain CounterTopType ButterKnifeType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType LettuceType)
        (canContain CounterTopType MugType)
        (canContain CounterTopType PanType)
        (canContain CounterTopType PotatoType)
        (canContain CounterTopType TomatoType)
        (canContain DiningTableType AppleType)
        (canContain DiningTableType BreadType)
        (canContain DiningTableType ButterKnifeType)
        (canContain DiningTableType EggType)
        (canContain DiningTableType LettuceType)
        (canContain DiningTableType MugType)
        (canContain DiningTableType PanType)
        (canContain DiningTableType PotatoType)
        (canContain DiningTableType TomatoType)
        (canContain DrawerType ButterKnifeType)
        (canContain FridgeType AppleType)
        (canContain FridgeType BreadType)
        (canContain FridgeType EggType)
        (canContain FridgeType LettuceType)
        (canContain FridgeType MugType)
        (canContain FridgeType PanType)
        (canContain FridgeType PotatoType)
        (canContain FridgeType TomatoType)
        (canContain GarbageCanType AppleType)
        (canContain GarbageCanType BreadType)
        (canContain GarbageCanType EggType)
        (canContain GarbageCanType LettuceType)
        (canContain GarbageCanType PotatoType)
        (canContain GarbageCanType TomatoType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType BreadType)
        (canContain MicrowaveType EggType)
        (canContain MicrowaveType MugType)
        (canContain MicrowaveType PotatoType)
        (canContain MicrowaveType TomatoType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType ButterKnifeType)
        (canContain SinkBasinType EggType)
        (canContain SinkBasinType LettuceType)
        (canContain SinkBasinType MugType)
        (canContain SinkBasinType PanType)
        (canContain SinkBasinType PotatoType)
        (canContain SinkBasinType TomatoType)
        (canContain StoveBurnerType PanType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (coolable ?o)
                    (objectType ?o AppleType)
                    (receptacleType ?r CounterTopType)
                    (isCool ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
